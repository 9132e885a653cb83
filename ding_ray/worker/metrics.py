"""Metric keys, defined once: the same ``section/name`` strings go to TensorBoard and to Ray's dashboard."""

from __future__ import annotations

from collections.abc import Mapping

COLLECTOR_ENV_STEPS = "collector/env_steps"
COLLECTOR_ENV_STEPS_PER_S = "collector/env_steps_per_s"
COLLECTOR_EPISODES = "collector/episodes"
COLLECTOR_RETURN_MEAN = "collector/episode_return_mean"
COLLECTOR_RETURN_MAX = "collector/episode_return_max"
COLLECTOR_RETURN_MIN = "collector/episode_return_min"
COLLECTOR_EPISODE_LENGTH = "collector/episode_length_mean"
COLLECTOR_ENV_ERRORS = "collector/env_errors"
COLLECTOR_NONFINITE_STEPS = "collector/nonfinite_steps"  # steps dropped for NaN/inf observations or rewards
COLLECTOR_POLICY_VERSION = "collector/policy_version"

EVAL_RETURN_MEAN = "evaluator/episode_return_mean"
EVAL_RETURN_STD = "evaluator/episode_return_std"
EVAL_RETURN_MAX = "evaluator/episode_return_max"
EVAL_RETURN_MIN = "evaluator/episode_return_min"
EVAL_EPISODE_LENGTH = "evaluator/episode_length_mean"
EVAL_ENV_STEPS_PER_S = "evaluator/env_steps_per_s"
EVAL_NONFINITE_EPISODES = "evaluator/nonfinite_episodes"  # episodes with a NaN/inf return: failed, no result

LEARNER_TRAIN_ITER = "learner/train_iter"
LEARNER_ITERS_PER_S = "learner/train_iter_per_s"
LEARNER_SAMPLES_PER_S = "learner/samples_per_s"
LEARNER_POLICY_VERSION = "learner/policy_version"
# learner iteration at training minus the policy version that collected a row (ding_ray.worker.policy_lag):
# quantiles over the run so far, and a histogram of every batch's median on the dashboard
LEARNER_POLICY_LAG = "learner/policy_lag"
LEARNER_POLICY_LAG_MEDIAN = "learner/policy_lag_median"
LEARNER_POLICY_LAG_P95 = "learner/policy_lag_p95"

# Distributed pipelines (ding_ray.distributed): what only a driver sees.
COLLECTOR_POLICY_VERSION_LAG = "collector/policy_version_lag"  # learner iteration - version of a batch
COLLECTOR_LOST_BATCHES = "collector/lost_batches"  # collect calls lost with a dead collector
COLLECTOR_RESTARTS = "collector/restarts"
BUFFER_SAMPLES_PER_INSERT = "buffer/samples_per_insert"  # items sampled per item inserted (replay ratio)


def learner_key(var: str) -> str:
    """Key of a value the policy's learn mode reports (``total_loss`` -> ``learner/total_loss``)."""
    return f"learner/{var}"


def log_scalars(tb_logger, scalars: Mapping[str, float], step: int) -> None:
    """Write ``scalars`` to a TensorBoard writer, if there is one."""
    if tb_logger is None:
        return
    for key, value in scalars.items():
        tb_logger.add_scalar(key, value, step)
