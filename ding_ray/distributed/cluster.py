"""Joining or starting Ray, fast: an address nothing answers at fails in seconds with the numbers
(Ray itself waits minutes). Whether the cluster can hold the pipeline's actors is
``placement.check_cluster``'s to say.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlparse

import ray
from easydict import EasyDict

from ding_ray.config.compile import split_input_cfg
from ding_ray.distributed.config import Plan, RayConfig, make_plan, namespace_of
from ding_ray.distributed.local_cpus import fit_local_cpus, with_run_shares
from ding_ray.distributed.run_config import compile_ray_config
from ding_ray.envs.game_ids import check_extra
from ding_ray.errors import ClusterError, ConfigError
from ding_ray.utils.memory import system_memory

logger = logging.getLogger(__name__)


# the smallest object store ``ray.init`` accepts (Ray's own minimum, 75 MiB)
OBJECT_STORE_MINIMUM_BYTES = 75 * 2**20


def ray_address_file() -> str:
    """Where ``ray start`` leaves the address of the cluster it started or joined: ``ray`` in Ray's
    default temp dir (RAY_TMPDIR, else TMPDIR, else /tmp, as Ray chooses it)."""
    temp = os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(temp, "ray", "ray_current_cluster")


def existing_cluster_address() -> str | None:
    """The address ``ray.init()`` would join (RAY_ADDRESS, or the last ``ray start`` here), if any."""
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    try:
        with open(ray_address_file()) as f:
            return f.read().strip() or None
    except OSError:  # no ``ray start`` here
        return None


def check_reachable(address: str, timeout_s: float = 3.0) -> None:
    """Raise ``ClusterError`` unless a TCP connection to ``address`` opens within ``timeout_s``."""
    if address in ("auto", "local"):
        return
    parsed = urlparse(address if "://" in address else f"tcp://{address}")
    host, port = parsed.hostname, parsed.port
    if host is None or port is None:
        raise ClusterError(f"ray.address '{address}' is not 'auto', 'host:port' or 'ray://host:port'.")
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as err:
        raise ClusterError(
            f"Cannot reach the Ray cluster at '{address}' ({host}:{port}: {err}). Is the head node up "
            "(`ray start --head` or `ray up cluster.yaml`) and is the port open? Use address=None to "
            "start Ray on this machine instead."
        ) from err


def init_ray(ray_cfg: EasyDict, namespace: str) -> bool:
    """Connect to or start Ray as ``ray_cfg`` says; True if this call did (so should shut it down).

    A Ray already initialised in this process (a test fixture, a notebook) is used as it is.
    """
    check_object_store_memory(ray_cfg)
    if ray.is_initialized():
        return False
    _connect(ray_cfg, namespace, cluster_to_join(ray_cfg))
    return True


# what ``ray up`` leaves on a cluster's head node: a driver run there (``ray submit``) is that cluster's
LAUNCHER_HEAD_FILE = "~/ray_bootstrap_config.yaml"


def cluster_to_join(ray_cfg: EasyDict) -> tuple[str, str] | None:
    """``(address, address to pass to ray.init)`` of the cluster ``init_ray`` joins: ``ray.address``,
    else the one RAY_ADDRESS / ``ray start`` left here (if it answers); None: it starts Ray here.

    A driver that is meant to join a cluster (RAY_ADDRESS is set, or it runs on the head of a cluster
    that ``ray up`` started) and finds none raises ``ClusterError``, never starts a Ray of its own."""
    if ray_cfg.address is not None:
        return ray_cfg.address, ray_cfg.address
    found = existing_cluster_address()
    try:
        if found is None:
            raise ClusterError("no `ray start` on this machine left an address")
        check_reachable(found)
    except ClusterError as err:
        meant = "RAY_ADDRESS is set" if os.environ.get("RAY_ADDRESS") else None
        if meant is None and os.path.exists(os.path.expanduser(LAUNCHER_HEAD_FILE)):
            meant = f"this is the head of a cluster that `ray up` started ({LAUNCHER_HEAD_FILE} is here)"
        if meant is not None:
            where = f"nothing answers at {found}" if found is not None else str(err)
            raise ClusterError(
                f"This driver is meant to join a Ray cluster ({meant}) but {where}; it does not start a "
                "Ray of its own instead. Check the cluster (`ray status` on its head), bring it up again "
                "(`ray up CLUSTER.yaml`), or point RAY_ADDRESS at a running one."
            ) from err
        if found is not None:
            logger.warning("ignoring the stale Ray address %s (nothing answers there)", found)
        return None
    # joined as "auto", as a plain ray.init() would: with that, and not with the address
    # itself, Ray sends the ~/.ray/auth_token of a cluster that token authentication guards
    return found, "auto" if not found.startswith("ray://") else found


def _connect(ray_cfg: EasyDict, namespace: str, cluster: tuple[str, str] | None) -> None:
    """Join ``cluster`` (``cluster_to_join``'s answer), or start Ray here when it is None."""
    address = None if cluster is None else cluster[0]
    try:
        if cluster is None:
            if not ray_cfg.include_dashboard:
                logger.info("starting Ray without its dashboard (ray.include_dashboard=True turns it on)")
            start_local_ray(
                namespace,
                num_cpus=ray_cfg.num_cpus,
                include_dashboard=ray_cfg.include_dashboard,
                dashboard_host=ray_cfg.dashboard_host,
                object_store_memory=ray_cfg.get("object_store_memory"),
            )
        else:
            if ray_cfg.get("object_store_memory") is not None:
                logger.warning(
                    "ray.object_store_memory is ignored: the Ray at %s (RAY_ADDRESS or `ray start`) has "
                    "its object store already",
                    address,
                )
            check_reachable(address)
            logger.info("joining the Ray cluster at %s", address)
            join_cluster(cluster[1], namespace)
    except ConnectionError as err:
        raise ClusterError(
            f"Could not connect to Ray at '{address}': {err}. Start a cluster first (`ray start --head`) "
            "or use address=None to start Ray on this machine. A cluster that token authentication "
            "guards also needs RAY_AUTH_MODE=token and its token (~/.ray/auth_token or RAY_AUTH_TOKEN); "
            "see docs/security.md."
        ) from err


def start_local_ray(
    namespace: str | None = None,
    num_cpus: int | None = None,
    include_dashboard: bool = False,
    dashboard_host: str = "127.0.0.1",
    object_store_memory: int | None = None,
) -> None:
    """``ray.init()`` of a Ray on this machine alone, every port of it listening on 127.0.0.1.

    Left to itself, Ray on Linux takes this machine's network address as the node's and opens
    the GCS, raylet, worker, agent and metrics ports on all interfaces, and whoever reaches one
    of them can run code here. A Ray that a driver starts for itself serves that driver only, so
    its node address is the loopback one (what Ray does on macOS and Windows) and only the
    dashboard goes where ``dashboard_host`` says. A cluster other machines join is started with
    ``ray start --head`` (or ``ray up``) and joined through ``ray.address``.
    """
    with _loopback_node_address(), _without_ray_token_warning():
        ray.init(
            address="local",  # a new Ray, even where a stopped `ray start` left its address
            num_cpus=num_cpus,
            namespace=namespace,
            include_dashboard=include_dashboard,
            dashboard_host=dashboard_host,
            object_store_memory=None if object_store_memory is None else int(object_store_memory),
        )
    node_ip = ray.util.get_node_ip_address()
    if node_ip not in ("127.0.0.1", "::1"):
        logger.warning("this Ray's node address is %s: its ports are open on the network", node_ip)


@contextlib.contextmanager
def _loopback_node_address() -> Iterator[None]:
    """While it is open, ``ray.util.get_node_ip_address()`` answers the loopback address, and a
    ``ray.init()`` that starts Ray takes it as the node's address.

    Ray offers no argument for this: ``ray.init(_node_ip_address=...)`` and ``ray start
    --node-ip-address`` both turn 127.0.0.1 into this machine's network address, and
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (the documented switch behind the loopback choice) is read
    once, when ``ray`` is imported. A new node asks ``ray.util.get_node_ip_address()`` for its
    address; if a Ray release stops asking, Ray listens on the network again and
    ``start_local_ray`` warns (tests/test_security.py fails).
    """
    public = ray.util.get_node_ip_address
    ray.util.get_node_ip_address = lambda address=None: "127.0.0.1"
    try:
        yield
    finally:
        ray.util.get_node_ip_address = public


# What ray.init() logs when it turns token authentication on by itself (RAY_AUTH_MODE unset).
RAY_TOKEN_WARNING = "Token authentication is enabled for this Ray cluster"


class _DropRecord(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)


@contextlib.contextmanager
def _without_ray_token_warning() -> Iterator[None]:
    """Token authentication on for the Ray this process starts, without Ray's warning that it
    chose so.

    With RAY_AUTH_MODE unset, ``ray.init()`` turns token mode on for a Ray it starts (and sets
    RAY_AUTH_MODE=token for the processes it spawns), then warns about it on every run. The mode
    is ding_ray's choice as well (docs/security.md), so that one warning is dropped; a user's
    RAY_AUTH_MODE (``disabled`` opts out) is left to Ray, warnings and all. Setting the variable
    here instead would not do: Ray reads the mode once, when ``ray`` is imported.
    """
    if os.environ.get("RAY_AUTH_MODE") is not None:
        yield
        return
    drop = _DropRecord(RAY_TOKEN_WARNING)
    handlers = list(logging.getLogger("ray").handlers)  # Ray's loggers pass records only to these
    for handler in handlers:
        handler.addFilter(drop)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(drop)


def check_object_store_memory(ray_cfg: Mapping) -> None:
    """Refuse (``ConfigError``), before Ray starts, a ``ray.object_store_memory`` that ``ray.init``
    would refuse (below Ray's minimum, above this machine's memory) or that cannot apply (with
    ``ray.address`` the cluster's object stores are sized already)."""
    value = ray_cfg.get("object_store_memory")
    if value is None:
        return
    if ray_cfg.get("address") is not None:
        raise ConfigError(
            f"Config key 'ray.object_store_memory' ({value!r}) sizes the object store of a Ray started on "
            f"this machine, but ray.address={ray_cfg['address']!r} joins a cluster, whose object stores are "
            "sized already: remove the key, or give the size to the cluster's `ray start "
            "--object-store-memory`."
        )
    low = OBJECT_STORE_MINIMUM_BYTES
    high = system_memory() or math.inf
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not low <= value <= high:
        got = f"{value!r} bytes ({value / 2**20:.1f} MiB)" if number else f"{type(value).__name__} {value!r}"
        raise ConfigError(
            f"Config key 'ray.object_store_memory' must be in [{low / 2**20:g} MiB, {high / 2**30:.1f} GiB] "
            f"(Ray's minimum to this machine's memory), got {got}. It is in bytes (2 * 2**30: 2 GiB); None "
            "leaves the size to Ray."
        )


def join_cluster(address: str, namespace: str, attempts: int = 3) -> None:
    """``ray.init(address)``, asking a Ray Client server (``ray://``) again if it fails to start
    the session process it runs per client: it forks that process while its own gRPC threads
    run, and on a loaded head the child can die at once ("Starting Ray client server failed")."""
    for attempt in range(1, attempts + 1):
        try:
            ray.init(address=address, namespace=namespace)
            return
        except ConnectionAbortedError as err:
            if not str(address).startswith("ray://") or attempt == attempts:
                raise
            logger.warning(
                "the Ray Client server at %s could not start a session (%s); asking again", address, err
            )
            time.sleep(2.0)


def start_run(
    input_cfg: Any, seed: int = 0, save_cfg: bool = True, resume: str | None = None
) -> tuple[EasyDict, Plan, bool]:
    """Compile the config and start (or join) Ray side by side: ``(cfg, plan, started_ray)``.

    Starting Ray takes seconds, mostly spent waiting on the processes it spawns; compiling the
    config loads torch and the policy (about 2 s here). A thread does the second during the
    first, so a driver whose own imports are light (``examples/apex_dqn.py``) has its first
    batch that much sooner. The Ray settings are read from the uncompiled ``ray`` section; the
    compiled config then checks every key. ``started_ray``: this call started Ray (shut it down).
    ``resume``: the folder of a run to continue; the config then writes there (and the actors' namespace
    is named after it), and ``RayRun(..., resume=...)`` takes up from its latest checkpoint.

    A Ray this call starts on this machine gets the actors' CPU shares fitted to its CPUs
    (``fit_local_cpus``); a cluster it joins, or a Ray already running in this process, is
    checked as it is (``RayRun`` fails on one too small, with the numbers). A resumed run
    starts from the shares its checkpoint records, and they are fitted as defaults are: they were
    the earlier run's (fitted to its Ray, perhaps), not a choice made for this one.
    """
    main_cfg, create_cfg = split_input_cfg(input_cfg)  # a config file is read once, here
    chosen = set(main_cfg.get("ray") or {})  # the user's own ray settings: never fitted
    if resume is not None:
        main_cfg = with_run_shares(main_cfg, os.fspath(resume))
    ray_cfg = RayConfig.default_config()
    ray_cfg.update(main_cfg.get("ray") or {})
    check_object_store_memory(ray_cfg)  # before Ray starts: Ray's own check raises a bare ValueError
    env = main_cfg.get("env") or {}
    # a game whose package is missing is named before Ray starts (compile_config checks it too)
    check_extra(env.get("env_id"), env.get("type") or (create_cfg.get("env") or {}).get("type"))
    running = ray.is_initialized()  # a test fixture's, a notebook's: used as it is
    cluster = None if running else cluster_to_join(ray_cfg)
    if not running and cluster is None and ray_cfg.check_resources:
        main_cfg = fit_local_cpus(main_cfg, ray_cfg, chosen)
    input_cfg = (main_cfg, create_cfg, resume)
    namespace = namespace_of(ray_cfg, main_cfg.get("exp_name") or "default_experiment")

    def connect() -> bool:
        if not running:
            _connect(ray_cfg, namespace, cluster)
        return not running

    if str(ray_cfg.address or "").startswith("ray://"):
        # Ray Client swaps ray's API while it connects; the actor classes (made remote when
        # their module is imported) are then defined before, not during, that switch.
        cfg = _compile(input_cfg, seed, save_cfg)
        return cfg, make_plan(cfg), connect()
    with ThreadPoolExecutor(1, thread_name_prefix="compile-config") as pool:
        compiled = pool.submit(_compile, input_cfg, seed, save_cfg)
        started = connect()
        try:
            cfg = compiled.result()
            plan = make_plan(cfg)
        except BaseException:
            if started:
                ray.shutdown()
            raise
    return cfg, plan, started


def _compile(input_cfg: tuple, seed: int, save_cfg: bool) -> EasyDict:
    main_cfg, create_cfg, resume = input_cfg
    # a resumed run writes its config once RayRun checked the checkpoint against it
    return compile_ray_config(
        (main_cfg, create_cfg), seed, save_cfg and resume is None, renew_dir=resume is None
    )


def lower_priority(nice: int) -> None:
    """Raise this process's niceness by ``nice``. The learner is the bottleneck of an
    asynchronous pipeline on a small machine; helpers that yield to it (collectors are held
    back by the rate limiter anyway) make the whole run faster."""
    if nice > 0 and hasattr(os, "nice"):
        os.nice(int(nice))
