"""The actors' CPU shares where a run starts Ray on this machine: ``fit_local_cpus`` fits them to
the CPUs that Ray gets (the machine's, or a container's quota), and ``with_run_shares`` takes
those a resumed run's checkpoint records."""

from __future__ import annotations

import logging
import os
from collections.abc import Collection

from easydict import EasyDict

from ding_ray.distributed.config import CPU_SHARES, fit_cpu_shares
from ding_ray.distributed.placement import check_local_cpus
from ding_ray.utils.resume import find_checkpoint

logger = logging.getLogger(__name__)


def with_run_shares(main_cfg: EasyDict, run_dir: str) -> EasyDict:
    """``main_cfg`` writing into ``run_dir``, with the CPU shares the run's latest checkpoint
    records where ``main_cfg`` sets none: a resumed run keeps its shares where they fit."""
    main_cfg = EasyDict({**main_cfg, "exp_name": run_dir})
    recorded = (find_checkpoint(run_dir, main_cfg)[1].meta.get("config") or {}).get("ray") or {}
    shares = {key: recorded[key] for key in CPU_SHARES if key in recorded}
    return EasyDict({**main_cfg, "ray": {**shares, **(main_cfg.get("ray") or {})}})


def fit_local_cpus(main_cfg: EasyDict, ray_cfg: EasyDict, chosen: Collection[str] = ()) -> EasyDict:
    """``main_cfg`` with ``ray.*_num_cpus`` shares that fit the Ray about to start on this machine.

    ``ding-ray train apex_dqn --num-collectors 4`` asks for 3 CPUs (4 collectors of 0.5, the
    learner 0.5, buffer and evaluator 0.25 each); a laptop with 2 cores then gets collectors of
    0.25 CPU. Ray only schedules by these shares: it pins no core to an actor.
    A share in ``chosen`` (the keys of the user's ``ray`` section: a config, ``--set``, a run's
    total_config.json given as the config) is the user's choice and stays as it is: if the rest
    cannot make room, ``ClusterError`` says so with the numbers before Ray starts. The fitted
    values go into the config, so the run's total_config.json records them and a run from it gets
    the same shares.
    """
    num_cpus = ray_cfg.num_cpus if ray_cfg.num_cpus is not None else _local_cpu_count()
    explicit = {key for key in CPU_SHARES if key in chosen}
    fitted = fit_cpu_shares(ray_cfg, float(num_cpus), explicit)
    if fitted:
        logger.info(
            "fitted %d collectors, %d learner(s), buffer and evaluator to the %g CPUs of the Ray started "
            "here: %s; total_config.json records it (set ray.*_num_cpus to choose the shares yourself)",
            ray_cfg.num_collectors,
            ray_cfg.num_learners,
            num_cpus,
            ", ".join(f"ray.{key}={value:g} (was {ray_cfg[key]:g})" for key, value in fitted.items()),
        )
        ray_cfg.update(fitted)
    check_local_cpus(ray_cfg, num_cpus)  # shares the user chose may still not fit: say so before Ray starts
    if not fitted:
        return main_cfg
    return EasyDict({**main_cfg, "ray": {**(main_cfg.get("ray") or {}), **fitted}})


def _local_cpu_count() -> float:
    """The CPUs ``ray.init()`` gives a Ray it starts here when num_cpus is not set: the machine's,
    or fewer where a cgroup's CPU quota (a container) says so, whole CPUs, as Ray counts them."""
    count = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    return float(count if quota is None else max(1, min(count, int(quota))))


def _cgroup_cpu_quota() -> float | None:
    """CPUs this process's cgroup may use (``cpu.max`` of cgroup v2, ``cpu.cfs_*`` of v1); None
    without a quota."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as f:
            quota_us = int(f.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
            period_us = int(f.read())
    except (OSError, ValueError):
        return None
    return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
