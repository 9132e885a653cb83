"""``InteractionSerialEvaluator``: run the greedy policy for some episodes and judge the run by them."""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from easydict import EasyDict

from ding_ray.config.merge import checked_config, default_config_of
from ding_ray.errors import ConfigError, EnvError
from ding_ray.policy.common import numpy_forward
from ding_ray.utils.registry import SERIAL_EVALUATOR_REGISTRY
from ding_ray.worker import metrics
from ding_ray.worker.env_runner import EnvRunner
from ding_ray.worker.env_stepper import EnvStepper
from ding_ray.worker.evaluator.vector_eval_monitor import VectorEvalMonitor
from ding_ray.worker.step_checks import all_finite

logger = logging.getLogger(__name__)

DEFAULT_MAX_EPISODE_STEPS = 100_000  # the cut of an evaluation episode when none is configured


class EvalCall(NamedTuple):
    """What one ``eval`` call asks of an evaluator's episode loop."""

    save_ckpt_fn: Callable[[str], Any] | None  # saves ckpt_best at a new best mean return
    train_iter: int
    envstep: int
    n_episode: int
    policy_kwargs: dict  # passed to every forward


class ISerialEvaluator:
    """Evaluator interface: ``should_eval(train_iter)`` and ``eval(...) -> (stop_flag, info)``
    (DI-engine's), and the ``Evaluator`` protocol of the Task stages (``submit``/``poll``)."""

    config: dict = {}
    # where submit() has the best weights saved ('ckpt_best.pth.tar'): a run sets its learner's
    save_ckpt_fn: Callable[[str], Any] | None = None
    _polled: tuple[bool, dict] | None = None

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)

    def submit(self, train_iter: int, envstep: int, **kwargs: Any) -> None:
        """Evaluate now; ``poll`` hands over ``(stop_flag, info)``."""
        self._polled = self.eval(self.save_ckpt_fn, train_iter, envstep, **kwargs)

    def poll(self) -> tuple[bool, dict] | None:
        out, self._polled = self._polled, None
        return out


@SERIAL_EVALUATOR_REGISTRY.register("interaction")
class InteractionSerialEvaluator(EnvRunner, ISerialEvaluator):
    """Evaluates ``n_episode`` episodes spread over the env manager's envs (see VectorEvalMonitor).

    Saves a checkpoint through ``save_ckpt_fn('ckpt_best.pth.tar')`` whenever the mean return is
    the best so far; ``stop_flag`` is True once the mean reaches ``stop_value`` after training began.

    Bad input: an observation that does not fit the env's space raises ``ShapeError`` before the
    model sees it (the collectors' check). An episode whose return is NaN or infinite (a non-finite
    reward) counts as failed: it takes its place among the ``n_episode`` episodes (so an evaluation
    still ends), is logged, counted in ``nonfinite_episodes`` (``evaluator/nonfinite_episodes``)
    and left out of the returns; an evaluation with no finite episode has the mean NaN and neither
    saves ``ckpt_best`` nor stops the run. DI-engine would average the inf in and stop. An episode
    cut by a failed env step is replaced, as in DI-engine; more of them than ``max(n_episode, 5)``
    in one evaluation (an env that fails in every episode) is an ``EnvError``. An episode that has not
    ended after ``max_episode_steps`` steps (an env without a time limit whose episodes never end) is
    cut, logged and counted in ``cut_episodes``, so an evaluation always ends; DI-engine would hang.

    Videos: every ``render.render_freq`` training iterations (``render.mode='train_iter'``) or env
    steps (``'envstep'``), and whenever ``eval(force_render=True)``, an evaluation asks its env
    manager to save videos of its episodes (``enable_save_replay``) under
    ``<exp_name>/videos/<instance_name>_<mode>_<iteration or envstep>`` and to stop afterwards
    (``disable_save_replay``), so the evaluations in between record nothing. ding_ray's envs record
    with gymnasium's RecordVideo, which needs moviepy (``pip install "ding_ray[video]"``).
    """

    config = dict(
        type="interaction",
        eval_freq=1000,  # learner iterations between evaluations
        n_episode=5,  # episodes per evaluation (copied from env.n_evaluator_episode)
        stop_value=None,  # mean return that ends training (copied from env.stop_value)
        render=dict(
            render_freq=-1,  # iterations or env steps between evaluations that save videos; -1: never
            mode="train_iter",  # what render_freq counts: 'train_iter' or 'envstep'
        ),
        figure_path=None,  # DI-engine's per-env statistics figures; not supported by ding_ray's envs
        # steps after which an evaluation episode that has not ended is cut (logged; its return so far
        # counts, as at a time limit); None: 100000. An env with a time limit ends its episodes first.
        max_episode_steps=None,
    )

    def __init__(
        self,
        cfg: dict,
        env: Any = None,
        policy: Any = None,
        tb_logger: Any = None,
        exp_name: str = "default_experiment",
        instance_name: str = "evaluator",
    ) -> None:
        cfg = checked_config(type(self), cfg, "policy.eval.evaluator")
        _check_render_cfg(cfg)
        self._cfg = cfg
        self._render = cfg.render
        self._exp_name, self._instance_name = exp_name, instance_name
        self._tb_logger = tb_logger
        self._default_n_episode = cfg.n_episode
        self._stop_value = cfg.stop_value
        self._env = None
        self._policy = None
        self._end_flag = False
        self.reset(policy, env)

    def reset(self, _policy: Any = None, _env: Any = None) -> None:
        self.reset_env(_env)
        self.reset_policy(_policy)
        self._max_episode_return = float("-inf")
        self._last_eval_iter = -1
        self.nonfinite_episodes = 0  # episodes with a NaN or infinite return, left out of the results
        self._last_render_iter = -1

    def reset_env(self, _env: Any = None) -> None:
        if _env is not None and self._render.render_freq != -1:
            _check_replay_support(
                _env,
                "policy.eval.evaluator.render.render_freq="
                f"{self._render.render_freq} saves videos of evaluation episodes",
            )
        super().reset_env(_env)

    def should_eval(self, train_iter: int) -> bool:
        """True at iteration 0 and then every ``eval_freq`` iterations."""
        if train_iter == self._last_eval_iter:
            return False
        if train_iter - self._last_eval_iter < self._cfg.eval_freq and train_iter != 0:
            return False
        self._last_eval_iter = train_iter
        return True

    def _should_render(self, envstep: int, train_iter: int) -> bool:
        """True every ``render_freq`` iterations or env steps (``render.mode``), as DI-engine counts."""
        if self._render.render_freq == -1:
            return False
        count = envstep if self._render.mode == "envstep" else train_iter
        if count - self._last_render_iter < self._render.render_freq:
            return False
        self._last_render_iter = count
        return True

    def eval(
        self,
        save_ckpt_fn: Callable[[str], Any] | None = None,
        train_iter: int = -1,
        envstep: int = -1,
        n_episode: int | None = None,
        force_render: bool = False,
        policy_kwargs: dict | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        """Run ``n_episode`` episodes; return ``(stop_flag, info)``. ``force_render`` saves videos of
        this evaluation whatever ``render.render_freq`` says (without moving its schedule)."""
        n_episode = n_episode or self._default_n_episode
        if not n_episode:
            raise ConfigError(
                "The evaluator has no episode count: set policy.eval.evaluator.n_episode (compile_config "
                "copies env.n_evaluator_episode there) or pass eval(n_episode=...)."
            )
        # as in DI-engine, force_render comes first so that it does not move the render schedule
        replay_path = None
        if force_render or self._should_render(envstep, train_iter):
            replay_path = self._start_recording(train_iter, envstep, force_render)
        try:
            call = EvalCall(save_ckpt_fn, train_iter, envstep, n_episode, policy_kwargs or {})
            stop_flag, info = self._run_episodes(call)
        finally:
            if replay_path is not None:
                self._stop_recording()
        if replay_path is not None:
            info["replay_path"] = replay_path
            logger.info("[%s] videos of this evaluation: %s", self._instance_name, replay_path)
        return stop_flag, info

    def _start_recording(self, train_iter: int, envstep: int, force_render: bool) -> str:
        if force_render:
            _check_replay_support(self._env, "eval(force_render=True) saves videos of evaluation episodes")
        count = envstep if self._render.mode == "envstep" else train_iter
        path = os.path.join(self._exp_name, "videos", f"{self._instance_name}_{self._render.mode}_{count}")
        self._env.enable_save_replay(path)
        return path

    def _stop_recording(self) -> None:
        self._env.disable_save_replay()

    def _run_episodes(self, call: EvalCall) -> tuple[bool, dict[str, Any]]:
        start = time.perf_counter()
        self._env.reset()
        self._policy.reset()
        monitor = VectorEvalMonitor(self._env.env_num, call.n_episode)
        forward = numpy_forward(self._policy)  # numpy outputs: actions the env managers take as they are
        stepper = EnvStepper(self._env, [self._policy])
        env_steps = 0
        partial = [0.0] * self._env.env_num  # return of each env's episode so far, for a cut episode
        cap = self._cfg.max_episode_steps or DEFAULT_MAX_EPISODE_STEPS
        cut = 0
        crashed = 0  # episodes ended by a failed step: replaced, as in DI-engine, up to a bound
        while not monitor.is_finished():
            obs = {i: o for i, o in stepper.ready_obs().items() if monitor.needs_episode(i)}
            for env_id, o in obs.items():
                self._check_obs(env_id, o, int(stepper.episode_length[env_id]))
            batch = stepper.act(forward, obs, **call.policy_kwargs)
            env_steps += batch.steps
            abnormal, done, length = batch.abnormal.tolist(), batch.done.tolist(), batch.length.tolist()
            for k, env_id in enumerate(batch.env_ids.tolist()):
                timestep = batch.timesteps[k]
                if abnormal[k]:
                    partial[env_id] = 0.0
                    crashed += 1
                    if crashed > max(call.n_episode, 5):  # an env that fails in every episode: no end
                        raise _episodes_keep_failing(
                            self._env_name(env_id),
                            crashed,
                            monitor,
                            call.n_episode,
                            timestep.info.get("error"),
                        )
                    continue
                partial[env_id] += float(np.sum(timestep.reward))
                if done[k] or length[k] >= cap:
                    info = timestep.info
                    if not done[k]:  # an episode that does not end: cut, as at a time limit
                        cut += 1
                        info = self._cut_episode(env_id, cap, partial[env_id])
                        stepper.end_episode(env_id)
                    partial[env_id] = 0.0
                    episode_return = info["eval_episode_return"]
                    if not all_finite(episode_return):
                        self._count_nonfinite(env_id, episode_return)
                    monitor.update_info(env_id, info)
                    monitor.update_reward(env_id, episode_return)
        return self._report(call, monitor, env_steps, cut, time.perf_counter() - start)

    def _report(
        self, call: EvalCall, monitor: VectorEvalMonitor, env_steps: int, cut: int, duration: float
    ) -> tuple[bool, dict[str, Any]]:
        """Summarize, log and judge the evaluation's episodes: ``(stop_flag, info)``."""
        all_returns = np.asarray(monitor.get_episode_return(), dtype=np.float64)
        returns = all_returns[np.isfinite(all_returns)]  # a non-finite return is a failed episode
        stats = [np.nan] * 4  # no finite episode: no result
        if len(returns):
            stats = [returns.mean(), returns.std(), returns.max(), returns.min()]
        info: dict[str, Any] = {
            "train_iter": call.train_iter,
            "envstep": call.envstep,
            "episode_count": len(all_returns),
            "eval_episode_return": returns.tolist(),
            "eval_episode_return_mean": float(stats[0]),
            "eval_episode_return_std": float(stats[1]),
            "eval_episode_return_max": float(stats[2]),
            "eval_episode_return_min": float(stats[3]),
            "evaluate_time": duration,
            "avg_envstep_per_sec": env_steps / max(duration, 1e-9),
            "nonfinite_episodes": len(all_returns) - len(returns),
            "cut_episodes": cut,
        }
        info.update({k: v for k, v in monitor.get_episode_info().items() if k not in info})
        mean = info["eval_episode_return_mean"]
        scalars = {
            metrics.EVAL_EPISODE_LENGTH: env_steps / max(len(all_returns), 1),
            metrics.EVAL_ENV_STEPS_PER_S: info["avg_envstep_per_sec"],
            metrics.EVAL_NONFINITE_EPISODES: self.nonfinite_episodes,
        }
        if len(returns):  # no figure of an evaluation without a result
            scalars[metrics.EVAL_RETURN_MEAN] = mean
            scalars[metrics.EVAL_RETURN_STD] = info["eval_episode_return_std"]
            scalars[metrics.EVAL_RETURN_MAX] = info["eval_episode_return_max"]
            scalars[metrics.EVAL_RETURN_MIN] = info["eval_episode_return_min"]
        metrics.log_scalars(self._tb_logger, scalars, max(call.envstep, 0))
        stop_flag = self._judge(mean, call.save_ckpt_fn, call.train_iter)
        failed = info["nonfinite_episodes"]
        logger.info(
            "[%s] iter %d envstep %d eval return %.2f +- %.2f (best %.2f)%s%s",
            self._instance_name,
            call.train_iter,
            call.envstep,
            mean,
            info["eval_episode_return_std"],
            self._max_episode_return,
            f"; {failed} of {len(all_returns)} episodes failed (non-finite return)" if failed else "",
            " -> stop value reached" if stop_flag else "",
        )
        return stop_flag, info

    def _cut_episode(self, env_id: int, cap: int, episode_return: float) -> dict[str, Any]:
        """End env ``env_id``'s episode, which ran ``cap`` steps without ending; its info."""
        logger.warning(
            "[%s] %s: an evaluation episode ran %d steps without ending; cut there "
            "(policy.eval.evaluator.max_episode_steps=%d), its return so far (%s) counts as the "
            "episode's. Does the env ever end its episodes? Give it a time limit (env.max_episode_steps) "
            "or raise max_episode_steps if its episodes are that long.",
            self._instance_name,
            self._env_name(env_id),
            cap,
            cap,
            episode_return,
        )
        self._env.reset({env_id: {}})
        return {"eval_episode_return": episode_return}

    def _count_nonfinite(self, env_id: int, episode_return: Any) -> None:
        """Count and report an episode whose return is NaN or infinite: it is a failed episode, not a
        result (one inf reward would otherwise make the best mean return inf and end the run)."""
        self.nonfinite_episodes += 1
        logger.warning(
            "[%s] %s finished an episode with the return %s: a NaN or infinite reward. The episode "
            "counts as failed: it is left out of the mean return, which decides ckpt_best and the stop "
            "value (%d such episodes so far, reported as %s)",
            self._instance_name,
            self._env_name(env_id),
            episode_return,
            self.nonfinite_episodes,
            metrics.EVAL_NONFINITE_EPISODES,
        )

    def _judge(self, mean: float, save_ckpt_fn: Callable[[str], Any] | None, train_iter: int) -> bool:
        """Save ``ckpt_best`` at a new best mean return; True once the mean reaches ``stop_value``.
        An evaluation whose every episode failed (mean NaN) is no result: neither best nor stop."""
        if not math.isfinite(mean):
            return False
        if mean > self._max_episode_return:
            if save_ckpt_fn is not None:
                save_ckpt_fn("ckpt_best.pth.tar")
            self._max_episode_return = mean
        return self._stop_value is not None and mean >= self._stop_value and train_iter > 0

    @property
    def best_return(self) -> float:
        return self._max_episode_return

    @property
    def last_eval_iter(self) -> int:
        return self._last_eval_iter

    def restore(self, best_return: float | None, last_eval_iter: int) -> None:
        """Continue a resumed run: its best return so far and the iteration it last evaluated."""
        self._max_episode_return = float("-inf") if best_return is None else float(best_return)
        self._last_eval_iter = int(last_eval_iter)


def _episodes_keep_failing(
    env_name: str, crashed: int, monitor: VectorEvalMonitor, n_episode: int, error: Any
) -> EnvError:
    return EnvError(
        f"The evaluation cannot finish: {crashed} of its episodes ended in a failed env step (more than "
        f"max(n_episode, 5)) while {monitor.get_current_episode()} of its {n_episode} finished. The last "
        f"failure, of {env_name}: {error}. An env that fails in every episode cannot be evaluated: fix "
        "the env's step (see the warnings above)."
    )


def _check_render_cfg(cfg: EasyDict) -> None:
    render = cfg.render
    if render.mode not in ("train_iter", "envstep"):
        raise ConfigError(
            f"policy.eval.evaluator.render.mode must be 'train_iter' or 'envstep' (what render_freq "
            f"counts), got {render.mode!r}."
        )
    if not isinstance(render.render_freq, int) or render.render_freq < -1:
        raise ConfigError(
            "policy.eval.evaluator.render.render_freq must be -1 (no videos) or an integer >= 0 "
            f"(iterations or env steps between evaluations that save videos), got {render.render_freq!r}."
        )
    if cfg.figure_path is not None:
        raise ConfigError(
            f"policy.eval.evaluator.figure_path={cfg.figure_path!r} is not supported yet: DI-engine hands it "
            "to each env's enable_save_figure after an evaluation episode, and ding_ray's envs cannot save "
            "figures. Set figure_path=None; for videos of evaluation episodes use render.render_freq."
        )


def _check_replay_support(env_manager: Any, why: str) -> None:
    """Raise unless ``env_manager`` can save replays for one evaluation and then stop."""
    # ding_ray's own managers hand the path to their envs, and GymnasiumEnv records with gymnasium's
    # RecordVideo, which needs moviepy; a manager of the user's own saves replays its own way.
    method = getattr(type(env_manager), "enable_save_replay", None)
    if (
        getattr(method, "__module__", "").startswith("ding_ray.")
        and importlib.util.find_spec("moviepy") is None
    ):
        raise ConfigError(
            f'{why}, which needs moviepy (gymnasium\'s RecordVideo): pip install "ding_ray[video]". '
            "Or set policy.eval.evaluator.render.render_freq=-1 (the default) for no videos."
        )
    if not callable(getattr(env_manager, "disable_save_replay", None)):
        raise ConfigError(
            f"{why}: the evaluator asks its env manager to save replays of that evaluation only "
            f"(enable_save_replay, then disable_save_replay), and {type(env_manager).__name__} has no "
            "disable_save_replay, so every later evaluation would be recorded too. Give the env manager "
            "a disable_save_replay() method, or set policy.eval.evaluator.render.render_freq=-1."
        )


def create_serial_evaluator(cfg: dict, **kwargs: Any) -> ISerialEvaluator:
    return SERIAL_EVALUATOR_REGISTRY.build(cfg.get("type", "interaction"), cfg=cfg, **kwargs)
