"""One tiny DQN config on a ``BadInput*`` env (4-float observations, 2 actions), shared by the suite."""

from __future__ import annotations

import copy

from easydict import EasyDict

from ding_ray.config import compile_config, deep_merge_dicts

MAIN = dict(
    exp_name="bad_input",
    env=dict(
        env_id="BadInputStep-v0",
        collector_env_num=2,
        evaluator_env_num=1,
        n_evaluator_episode=1,
        stop_value=None,
    ),
    policy=dict(
        model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16], dueling=False),
        learn=dict(update_per_collect=2, batch_size=8, learner=dict(hook=dict(log_show_after_iter=5))),
        collect=dict(n_sample=16),
        eval=dict(evaluator=dict(eval_freq=5)),
        other=dict(replay_buffer=dict(replay_buffer_size=200)),
    ),
)
CREATE = dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="dqn"))


def small_main(exp_name: str = "bad_input", **over) -> EasyDict:
    """``MAIN`` with ``exp_name`` and the nested overrides ``over`` (e.g. ``env=dict(env_id=...)``)."""
    return deep_merge_dicts(copy.deepcopy(MAIN), dict(over, exp_name=exp_name))


def compiled(tmp_path, **over) -> EasyDict:
    """The compiled config, its exp_name folder under ``tmp_path`` (nothing written)."""
    main = small_main(str(tmp_path / "exp"), **over)
    return compile_config(main, seed=0, auto=True, create_cfg=CREATE, save_cfg=False)
