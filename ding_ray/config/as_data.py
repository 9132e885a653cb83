"""A config read from a JSON file (a run's ``total_config.json``, a checkpoint's ``meta.json``) is
data: it never chooses code to run or a cluster to join.

A run folder is something users share and download. Two keys of a config would let such a folder
act on the machine that opens it: ``import_names`` (modules imported before anything is built; a
module file inside the run folder is importable whenever the working directory is on
``sys.path``) and ``ray.address`` (the cluster a resumed run joins). Read from a JSON file, an
``import_names`` entry is kept only for ding_ray's own modules and for modules this process has
imported already (the user's choice: ``import my_envs`` in the script, ``--import my_envs`` on
the command line); ``ray.address`` is dropped (``--address`` / ``ray.address`` set by the user
name the cluster). Each dropped value is named in a warning. A Python config file is the user's
own code and is read as it is.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

logger = logging.getLogger(__name__)

_OWN_PACKAGE = "ding_ray"


def config_as_data(cfg: Mapping, source: str) -> EasyDict:
    """``cfg`` without the module imports and cluster address it names (see the module docstring);
    ``source`` is the file it came from, for the warnings."""
    cfg = EasyDict(cfg)
    dropped: list[str] = []
    _drop_imports(cfg, dropped)
    if dropped:
        logger.warning(
            "%s names modules to import (%s); a config read from a file never imports code. Import "
            "them yourself if you trust them: `import <module>` before loading, or --import <module> "
            "with ding-ray.",
            source,
            ", ".join(dict.fromkeys(dropped)),
        )
    ray_section = cfg.get("ray")
    if isinstance(ray_section, Mapping) and ray_section.get("address") is not None:
        logger.warning(
            "%s names the Ray cluster %r; a config read from a file never picks a cluster. Pass "
            "--address (or set ray.address) to join it.",
            source,
            ray_section["address"],
        )
        ray_section["address"] = None
    return cfg


def _drop_imports(node: Any, dropped: list[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _drop_imports(item, dropped)
        return
    if not isinstance(node, dict):
        return
    listed = node.get("import_names")
    if listed:
        names = [listed] if isinstance(listed, str) else list(listed)
        kept = [n for n in names if isinstance(n, str) and _trusted(n)]
        dropped.extend(str(n) for n in names if n not in kept)
        node["import_names"] = kept
    for key, value in node.items():
        if key != "import_names":
            _drop_imports(value, dropped)


def _trusted(module: str) -> bool:
    """ding_ray's own modules, and modules this process imported before reading the file."""
    return module.split(".")[0] == _OWN_PACKAGE or module in sys.modules
