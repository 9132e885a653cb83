"""``RayConfig``: the top-level ``ray`` section of a config, with its defaults."""

from __future__ import annotations

import math
import os
from collections.abc import Collection
from dataclasses import dataclass

from easydict import EasyDict

from ding_ray.config.merge import default_config_of
from ding_ray.errors import ConfigError


class RayConfig:
    """Defaults of the ``ray`` section; ``compile_config(..., extra_defaults={'ray': ...})`` checks it.

    The CPU shares fit 2 collectors, the learner, the buffer and the evaluator on a 2-core laptop;
    on a cluster raise them (Ray reserves, it does not pin: a share is a scheduling promise). A Ray
    that ``start_run`` starts on this machine and that cannot hold the shares left at their defaults
    gets smaller ones (``fit_cpu_shares``), recorded in the run's total_config.json.
    """

    config = dict(
        address=None,  # None: join the cluster RAY_ADDRESS / `ray start` points at, else start Ray here
        namespace=None,  # Ray namespace of the named actors; None: the base name of exp_name
        num_cpus=None,  # CPUs of a Ray started here (None: all of this machine's)
        # bytes of the object store of a Ray started here (None: Ray's choice, 30% of the memory); a
        # cluster joined by address has its own (`ray start --object-store-memory`): an error with it
        object_store_memory=None,
        # A Ray started here skips its dashboard unless asked: starting it holds ray.init() up for
        # seconds on a small machine. Metrics still reach the node's Prometheus endpoint and TensorBoard;
        # a cluster from `ray start --head` has its dashboard either way.
        include_dashboard=False,
        dashboard_host="127.0.0.1",  # interface the dashboard binds to; '0.0.0.0' exposes it to the network
        check_resources=True,  # fail at once if the cluster is too small (turn off with an autoscaler)
        actor_start_timeout_s=120.0,  # seconds the actors may take to start before the run fails
        # seconds a collector call may take before its actor is treated as dead (killed, restarted
        # by Ray): a frozen process never answers nor dies. Calls far slower than usual are logged.
        call_timeout_s=300.0,
        # seconds the Ray head (its GCS) may not answer before the driver ends the run with one line
        # naming the checkpoint to resume from (without a head, Ray ends a driver itself, saying
        # nothing about the run); a head restarted by GCS fault tolerance must be back within it
        head_timeout_s=30.0,
        pipeline="auto",  # 'auto': on-policy -> 'sync', off-policy -> 'async'; or 'async' / 'sync'
        num_collectors=2,  # collector actors
        collector_num_cpus=0.5,  # CPUs reserved per collector
        collector_resources=dict(),  # custom resources per collector, e.g. {'collector_node': 1}
        collector_scheduling="SPREAD",  # 'SPREAD': collectors on as many nodes as possible; or 'DEFAULT'
        evaluator_num_cpus=0.25,
        learner_num_cpus=0.5,
        learner_num_gpus=0.0,  # a GPU for the learner (also set policy.cuda=True)
        learner_resources=dict(),  # custom resources of the learner, e.g. {'learner_node': 1}
        # learners training one policy data-parallel (a learner group: gradients averaged with
        # torch.distributed, each on its share of every minibatch); each gets the CPUs/GPUs above
        num_learners=1,
        buffer_num_cpus=0.25,
        buffer_resources=dict(),  # custom resources of the buffer, e.g. {'buffer_node': 1}: on the head
        torch_threads=1,  # torch threads of driver, collectors, evaluator (learner: policy.learn.num_threads)
        helper_nice=0,  # niceness added to collectors and evaluator (e.g. 5: the learner gets the CPU
        # first on a dedicated small machine; on a shared one, others' processes then starve them)
        max_restarts=-1,  # restarts of a dead collector or evaluator (-1: unlimited)
        # restarts of a dead learner or buffer actor; each reloads the run's latest checkpoint (see the
        # checkpoint section) and the run goes on. 0: a dead one ends the run. A learner group: none.
        core_max_restarts=3,
        n_sample=None,  # transitions per collect call; None: policy.collect.n_sample
        samples_per_insert=None,  # sampled / inserted items; None: update_per_collect*batch_size/n_sample
        samples_per_insert_tolerance=None,  # items the ratio may drift; None: 2x the largest call
        # who waits when collectors and learner run at different speeds (async pipeline): 'ratio' both,
        # to keep samples_per_insert (Ape-X); 'block' only the collectors, once they are the tolerance
        # ahead (IMPALA: the learner never waits while the buffer has data); 'drop' nobody (the buffer
        # drops its oldest items, the driver the batches the buffer cannot take in time)
        backpressure="ratio",
        min_replay_size=None,  # items in the buffer before training starts; None: 2 learner calls' worth
        train_iters_per_call=8,  # gradient steps (minibatches) per learner call
        sample_prefetch=2,  # sample+train calls queued on the learner, so it never waits on the driver
        publish_freq=8,  # learner iterations between weight publications
        progress_bar=True,  # a tqdm line on the driver
        report_interval_s=2.0,  # seconds between driver metric / TensorBoard points
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)


@dataclass
class Plan:
    """The numbers a pipeline runs by, derived from the compiled config."""

    namespace: str
    n_sample: int  # per collect call
    batch_size: int
    sample_size: int  # items per learner call
    samples_per_insert: float
    tolerance: float
    min_replay_size: int
    random_collect_size: int


def make_plan(cfg: EasyDict) -> Plan:
    """Resolve the ``None`` defaults of ``cfg.ray`` against the policy's settings."""
    ray_cfg, policy = cfg.ray, cfg.policy
    if ray_cfg.num_learners < 1:
        raise ConfigError(f"ray.num_learners must be >= 1, got {ray_cfg.num_learners}.")
    if ray_cfg.num_collectors < 1:
        raise ConfigError(f"ray.num_collectors must be >= 1, got {ray_cfg.num_collectors}.")
    if ray_cfg.pipeline not in ("auto", "async", "sync"):
        raise ConfigError(f"ray.pipeline must be 'auto', 'async' or 'sync', got '{ray_cfg.pipeline}'.")
    n_sample = ray_cfg.n_sample or policy.collect.get("n_sample")
    if not n_sample:
        raise ConfigError("Set policy.collect.n_sample (or ray.n_sample): transitions per collect call.")
    batch_size = int(policy.learn.batch_size)
    sample_size = batch_size * int(ray_cfg.train_iters_per_call)
    capacity = ((policy.get("other") or {}).get("replay_buffer") or {}).get("replay_buffer_size")
    if pipeline_of(cfg) == "async" and capacity and sample_size > capacity:
        raise ConfigError(
            f"Each learner call samples ray.train_iters_per_call x policy.learn.batch_size = "
            f"{ray_cfg.train_iters_per_call} x {batch_size} = {sample_size} items, but the replay buffer "
            f"holds {capacity} (policy.other.replay_buffer.replay_buffer_size): no sample could ever be "
            "served. Lower ray.train_iters_per_call or raise replay_buffer_size."
        )
    spi = ray_cfg.samples_per_insert
    if spi is None:
        updates = policy.learn.get("update_per_collect") or 1  # on-policy PPO has it as None
        spi = updates * batch_size / (policy.collect.get("n_sample") or n_sample)
    largest = max(sample_size, spi * n_sample * ray_cfg.num_collectors)
    tolerance = ray_cfg.samples_per_insert_tolerance
    tolerance = 2 * largest if tolerance is None else tolerance
    random_collect = int(policy.get("random_collect_size", 0) or 0)
    min_size = ray_cfg.min_replay_size or max(2 * sample_size, random_collect)
    namespace = namespace_of(ray_cfg, cfg.exp_name)
    return Plan(
        namespace=namespace,
        n_sample=int(n_sample),
        batch_size=batch_size,
        sample_size=sample_size,
        samples_per_insert=float(spi),
        tolerance=float(tolerance),
        min_replay_size=int(math.ceil(min_size)),
        random_collect_size=random_collect,
    )


def pipeline_of(cfg: EasyDict) -> str:
    """'sync' or 'async': ``ray.pipeline``, or by ``policy.on_policy`` when it is 'auto'."""
    if cfg.ray.pipeline != "auto":
        return cfg.ray.pipeline
    return "sync" if cfg.policy.on_policy else "async"


# the CPUs reserved per learner, for the buffer, for the evaluator and per collector
CPU_SHARES = ("learner_num_cpus", "buffer_num_cpus", "evaluator_num_cpus", "collector_num_cpus")


def fit_cpu_shares(ray_cfg: EasyDict, num_cpus: float, explicit: Collection[str] = ()) -> dict[str, float]:
    """The ``ray.*_num_cpus`` shares that make every actor fit a Ray of ``num_cpus`` CPUs on this
    machine: ``{}`` when they fit already, or when no change of the shares not in ``explicit`` can.

    The collectors' share shrinks first, to what the learners, buffer and evaluator leave them; if
    those leave nothing, every share not in ``explicit`` is scaled by one factor. A share the user
    set (``explicit``) is never changed: then the resource check says what does not fit. Shares
    are rounded down to Ray's 0.0001 CPU.
    """
    counts = dict(zip(CPU_SHARES, (ray_cfg.num_learners, 1, 1, ray_cfg.num_collectors)))
    shares = {key: float(ray_cfg[key]) for key in CPU_SHARES}
    wanted = sum(counts[key] * shares[key] for key in CPU_SHARES)
    if wanted <= num_cpus + 1e-9:
        return {}
    free = [key for key in CPU_SHARES if key not in explicit and shares[key] > 0]
    if "collector_num_cpus" in free:
        others = wanted - counts["collector_num_cpus"] * shares["collector_num_cpus"]
        share = _floor_share((num_cpus - others) / counts["collector_num_cpus"])
        if share > 0:
            return {"collector_num_cpus": share}
    fixed = sum(counts[key] * shares[key] for key in CPU_SHARES if key not in free)
    if not free or fixed >= num_cpus:
        return {}
    factor = (num_cpus - fixed) / (wanted - fixed)
    fitted = {key: _floor_share(shares[key] * factor) for key in free}
    return fitted if all(share > 0 for share in fitted.values()) else {}


def _floor_share(cpus: float) -> float:
    return math.floor(cpus * 10_000 + 1e-6) / 10_000


def namespace_of(ray_cfg: EasyDict, exp_name: str) -> str:
    """``ray.namespace``, or else the base name of ``exp_name``."""
    return ray_cfg.get("namespace") or os.path.basename(os.path.normpath(exp_name)) or "ding_ray"


def learner_name(rank: int) -> str:
    """``learner`` (the one that publishes), then ``learner-1`` ... for a learner group."""
    return "learner" if rank == 0 else f"learner-{rank}"
