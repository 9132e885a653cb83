"""What both serial collectors make of each env step (``EnvStepper`` takes it): checked transitions,
episode returns and statistics."""

from __future__ import annotations

import copy
import logging
from typing import Any

from ding_ray.config.merge import checked_config
from ding_ray.policy.common import numpy_forward
from ding_ray.worker import metrics
from ding_ray.worker.collector.base import EpisodeStats, ISerialCollector, Timer
from ding_ray.worker.env_runner import EnvRunner
from ding_ray.worker.env_stepper import EnvStepper, Forward, random_forward
from ding_ray.worker.step_checks import MAX_NONFINITE_IN_A_ROW, all_finite, too_many_nonfinite

logger = logging.getLogger(__name__)
_UNSEEN = object()  # no observation of the env checked yet (None is an observation, if a bad one)


class VectorCollector(EnvRunner, ISerialCollector):
    """Holds env, policy and statistics; ``_step`` advances every ready env by one step (through an
    ``EnvStepper``, which also resets the policy's state of an env whose episode ended).

    Every step is checked before it becomes training data:

    - an observation whose shape or dtype differs from the env's ``observation_space`` (what the
      model was built for) raises ``ShapeError`` naming the env and both shapes (``_check_obs``,
      which the evaluator runs too);
    - a step whose observation, next observation or reward holds NaN or inf is dropped: it is
      counted in ``nonfinite_count`` (reported as ``collector/nonfinite_steps`` and logged as a
      warning), the env's episode is ended there like a crashed env's and the env is reset, so
      the learner never trains on a non-finite value. An env that does this
      ``MAX_NONFINITE_IN_A_ROW`` times in a row raises ``NonFiniteError``.
    """

    config = dict(
        deepcopy_obs=False,  # copy observations before storing (envs that reuse their obs buffer)
        transform_obs=False,  # kept for DI-engine configs; observations are numpy arrays already
        collect_print_freq=100,  # learner iterations between two statistics reports
    )
    _unroll_len = 1  # steps of one train sample (IMPALA's unrolls); from the policy in reset_policy

    def __init__(
        self,
        cfg: dict,
        env: Any = None,
        policy: Any = None,
        tb_logger: Any = None,
        exp_name: str = "default_experiment",
        instance_name: str = "collector",
    ) -> None:
        self._cfg = checked_config(type(self), cfg, "policy.collect.collector")
        self._exp_name = exp_name
        self._instance_name = instance_name
        self._tb_logger = tb_logger
        self._env = None
        self._policy = None
        self._total_envstep_count = 0
        self._stats = EpisodeStats()
        self.nonfinite_count = 0  # steps dropped for NaN/inf observations or rewards
        self._last_report_iter: int | None = None
        self._end_flag = False
        self.reset(policy, env)

    @property
    def envepisode(self) -> int:
        """Episodes finished in this collector's envs so far."""
        return self._stats.total_episodes

    @envepisode.setter
    def envepisode(self, value: int) -> None:
        self._stats.total_episodes = int(value)

    # ----- reset / close ---------------------------------------------------------------------
    def reset_env(self, _env: Any = None) -> None:
        super().reset_env(_env)
        if self._env is not None:
            self._env_num = self._env.env_num
            self._traj = {i: [] for i in range(self._env_num)}
            self._stepper = EnvStepper(self._env, self._policy_modes())
            self._random_forward = random_forward(self._env)  # the warm-up's uniform actions
            self._episode_return = [0.0] * self._env_num
            self._nonfinite_in_a_row = [0] * self._env_num
            # each env's last next_obs found finite, of the right shape
            self._checked_obs: dict[int, Any] = {}
            self._unchecked: dict[int, bool] = {}  # whether the obs an env acts on is still to be checked

    def reset_policy(self, _policy: Any = None) -> None:
        super().reset_policy(_policy)
        if self._env is not None:
            self._stepper.policies = self._policy_modes()
        if self._policy is not None:
            self._forward = numpy_forward(self._policy)
            self._on_policy = bool(_policy_attribute(self._policy, "on_policy", False))
            self._traj_len_inf = bool(_policy_attribute(self._policy, "traj_len_inf", False))
            self._unroll_len = int(_policy_attribute(self._policy, "unroll_len", 1))  # IMPALA's train samples
            self._random_with_policy = bool(
                _policy_attribute(self._policy, "transition_with_policy_data", False)
            )

    def reset(self, _policy: Any = None, _env: Any = None) -> None:
        self.reset_env(_env)  # also starts empty trajectories
        self.reset_policy(_policy)

    def _policy_modes(self) -> list[Any]:
        """The policy modes whose per-env state is reset at an episode end."""
        return [] if self._policy is None else [self._policy]

    def _warm_up_forward(self) -> Forward:
        """How a warm-up (``policy.random_collect_size``) acts: uniformly at random, or with the
        policy itself where it sets ``transition_with_policy_data`` (DI-engine's random policy)."""
        return self._forward if self._random_with_policy else self._random_forward

    # ----- stepping ----------------------------------------------------------------------------
    def _step(self, forward: Forward, policy_kwargs: dict, train_iter: int) -> list[tuple[int, dict, bool]]:
        """Step every ready env once. Returns ``(env_id, transition, episode_over)`` per normal step;
        each transition carries ``collect_iter`` (``train_iter``, as DI-engine's collectors add it).

        A crashed env's step, and a step with NaN/inf values, is dropped; the env's trajectory so
        far is ended like a truncated episode.
        """
        obs = self._stepper.ready_obs()
        for env_id, o in obs.items():
            # An obs that is not the next_obs checked in the env's last step is new (a reset's):
            # its shape is checked now, its values with the step it is acted on in.
            self._unchecked[env_id] = o is not self._checked_obs.get(env_id, _UNSEEN)
            if self._unchecked[env_id]:
                self._check_obs(env_id, o, 0)
        batch = self._stepper.act(forward, obs, **policy_kwargs)  # numpy outputs: the fast path
        events = []
        abnormal, done, length = batch.abnormal.tolist(), batch.done.tolist(), batch.length.tolist()
        for k, env_id in enumerate(batch.env_ids.tolist()):
            if abnormal[k]:
                events.append((env_id, None, True))
                self._episode_return[env_id] = 0.0
                continue
            timestep, acted_on = batch.timesteps[k], batch.obs[k]
            self._check_obs(env_id, timestep.obs, length[k])
            if not all_finite(timestep.obs, timestep.reward) or (
                self._unchecked[env_id] and not all_finite(acted_on)
            ):
                self._drop_nonfinite(env_id, done[k])
                events.append((env_id, None, True))
                continue
            self._checked_obs[env_id] = timestep.obs
            self._nonfinite_in_a_row[env_id] = 0
            self._total_envstep_count += 1
            self._stats.env_steps += 1
            self._episode_return[env_id] += timestep.reward
            transition = self._policy.process_transition(acted_on, batch.outputs[k], timestep)
            transition["collect_iter"] = train_iter
            if self._cfg.deepcopy_obs:  # the env overwrites its observation arrays in place
                transition["obs"] = copy.deepcopy(transition["obs"])
                transition["next_obs"] = copy.deepcopy(transition["next_obs"])
            if done[k]:
                self._stats.add_episode(self._episode_return[env_id], length[k])
                self._episode_return[env_id] = 0.0
            events.append((env_id, transition, done[k]))
        return events

    def _drop_nonfinite(self, env_id: int, done: bool) -> None:
        """Count a step with NaN/inf values, end the env's episode there and reset the env."""
        self.nonfinite_count += 1
        self._nonfinite_in_a_row[env_id] += 1
        name = self._env_name(env_id)
        if self._nonfinite_in_a_row[env_id] >= MAX_NONFINITE_IN_A_ROW:
            raise too_many_nonfinite(name, self._nonfinite_in_a_row[env_id])
        if self.nonfinite_count == 1 or self.nonfinite_count % 100 == 0:
            logger.warning(
                "[%s] %s returned a NaN or infinite observation or reward; the step is dropped and the "
                "env reset (%d such steps so far, reported as %s)",
                self._instance_name,
                name,
                self.nonfinite_count,
                metrics.COLLECTOR_NONFINITE_STEPS,
            )
        self._episode_return[env_id] = 0.0
        if not done:  # a finished env was reset by the manager, and its episode ended, already
            self._stepper.end_episode(env_id)
            self._env.reset({env_id: None})

    def _maybe_report(self, train_iter: int) -> None:
        """Log statistics at the first call, then every ``collect_print_freq`` iterations with episodes."""
        last = self._last_report_iter
        if last is not None and (train_iter - last < self._cfg.collect_print_freq or not self._stats.returns):
            return
        self._last_report_iter = train_iter
        scalars = self._stats.report(self._total_envstep_count, getattr(self._env, "error_count", 0))
        scalars[metrics.COLLECTOR_NONFINITE_STEPS] = self.nonfinite_count
        metrics.log_scalars(self._tb_logger, scalars, self._total_envstep_count)
        ret = scalars.get(metrics.COLLECTOR_RETURN_MEAN)
        logger.info(
            "[%s] iter %d envstep %d return_mean %s steps/s %.0f",
            self._instance_name,
            train_iter,
            self._total_envstep_count,
            "n/a" if ret is None else f"{ret:.2f}",
            scalars[metrics.COLLECTOR_ENV_STEPS_PER_S],
        )

    def _timer(self) -> Timer:
        return _StatsTimer(self._stats)


def _policy_attribute(policy: Any, name: str, default: Any) -> Any:
    try:
        return policy.get_attribute(name)
    except NotImplementedError:  # a policy of the user's own that does not define it
        return default


class _StatsTimer(Timer):
    def __init__(self, stats: EpisodeStats) -> None:
        super().__init__()
        self._stats = stats

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        self._stats.seconds += self.seconds
