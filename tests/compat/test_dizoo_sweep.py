"""The dizoo sweep: DI-engine 0.5.3's own config files, changed only in env type and id, run 2,000 env steps.

Every ``*_<policy>_config.py`` (``POLICIES``) under dizoo's classic_control, box2d and mujoco folders of
the wheel (read as data, see ``tests/compat/dizoo.py``) either compiles and runs 2,000 env steps with
ding_ray's serial entries, or is refused by name: ``REFUSED`` below says which and why, and the test
asserts that exact refusal, so no config is passed over without a word.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from ding_ray.config import compile_config
from ding_ray.entry import serial_pipeline, serial_pipeline_onpolicy
from ding_ray.entry.serial_entry_onpolicy import is_on_policy
from ding_ray.errors import ConfigError, EnvError, RegistryError
from ding_ray.policy import POLICY_REGISTRY
from tests.compat.dizoo import read_dizoo_config, wheel_root

pytest.importorskip("mujoco", reason='the sweep runs MuJoCo configs: pip install "ding_ray[mujoco]"')
pytest.importorskip("Box2D", reason='the sweep runs Box2D configs: pip install "ding_ray[box2d]"')

FAMILIES = ("classic_control", "box2d", "mujoco")
POLICIES = re.compile(r"_(dqn|ppo|onppo|sac|impala|c51|qrdqn|iqn|rainbow|td3|ddpg|a2c)_config\.py$")
ENV_STEPS = 2000

_REWARD_MODEL = (ConfigError, r"'reward_model' is not supported by ding_ray yet")

# The configs ding_ray refuses, each with the error it raises (class, a pattern of its message).
# When ding_ray gains what one of them needs, take it out of here: the sweep then runs it.
REFUSED: dict[str, tuple[type[Exception], str]] = {
    # reward models (GAIL, T-REX, D-REX, RND, GCL): not in ding_ray yet
    **{
        path: _REWARD_MODEL
        for path in (
            "box2d/bipedalwalker/config/bipedalwalker_gail_sac_config.py",
            "box2d/lunarlander/config/lunarlander_gail_dqn_config.py",
            "box2d/lunarlander/config/lunarlander_rnd_onppo_config.py",
            "box2d/lunarlander/config/lunarlander_trex_dqn_config.py",
            "classic_control/cartpole/config/cartpole_drex_dqn_config.py",
            "classic_control/cartpole/config/cartpole_rnd_onppo_config.py",
            "classic_control/cartpole/config/cartpole_trex_dqn_config.py",
            "classic_control/cartpole/config/cartpole_trex_onppo_config.py",
            "mujoco/config/ant_gail_sac_config.py",
            "mujoco/config/ant_trex_onppo_config.py",
            "mujoco/config/ant_trex_sac_config.py",
            "mujoco/config/halfcheetah_gail_sac_config.py",
            "mujoco/config/halfcheetah_gcl_sac_config.py",
            "mujoco/config/halfcheetah_trex_onppo_config.py",
            "mujoco/config/halfcheetah_trex_sac_config.py",
            "mujoco/config/hopper_gail_sac_config.py",
            "mujoco/config/hopper_trex_onppo_config.py",
            "mujoco/config/hopper_trex_sac_config.py",
            "mujoco/config/walker2d_gail_ddpg_config.py",
            "mujoco/config/walker2d_gail_sac_config.py",
            "mujoco/config/walker2d_trex_onppo_config.py",
            "mujoco/config/walker2d_trex_sac_config.py",
        )
    },
    # SQIL again, under policy type 'sac': its expert-data keys belong to DI-engine's
    # serial_pipeline_sqil, which ding_ray does not have
    "classic_control/pendulum/config/pendulum_sqil_sac_config.py": (
        ConfigError,
        r"'policy.expert_random_collect_size' belongs to DI-engine's SQIL entry .* not support yet",
    ),
    # DI-engine's parallel mode (coordinator, Flask comm workers): ding_ray runs on Ray instead
    "classic_control/cartpole/config/parallel/cartpole_dqn_config.py": (
        ConfigError,
        r"belong to DI-engine's parallel mode",
    ),
    # 96x96 RGB frames, channels last from gymnasium's CarRacing (DI-engine's own carracing env moves
    # them first): ding_ray's conv DQN takes (3, 96, 96) as the config says, the plain env does not give it
    "box2d/carracing/config/carracing_dqn_config.py": (EnvError, r"\(96, 96, 3\), channels last.*moveaxis"),
    # the file puts exp_name under env (DI-engine ignores any key its env does not read; ding_ray
    # refuses unknown keys and points at the top-level exp_name)
    "mujoco/config/halfcheetah_ddpg_config.py": (
        ConfigError,
        r"Unknown config key 'env.exp_name'. Did you mean 'exp_name'",
    ),
}


# Configs of policy types ding_ray does not have (SAC for discrete actions, SQIL): refused while
# the type is not registered; once a policy registers it, the sweep runs the config.
_POLICY_TYPES = {
    "box2d/lunarlander/config/lunarlander_discrete_sac_config.py": "sac_discrete",
    "classic_control/cartpole/config/cartpole_sac_config.py": "discrete_sac",
    "mujoco/config/halfcheetah_sqil_sac_config.py": "sqil_sac",
    "mujoco/config/hopper_sqil_sac_config.py": "sqil_sac",
    "mujoco/config/walker2d_sqil_sac_config.py": "sqil_sac",
}
REFUSED.update(
    {
        path: (RegistryError, f"Unknown policy type '{name}'")
        for path, name in _POLICY_TYPES.items()
        if name not in POLICY_REGISTRY
    }
)


def _sweep() -> list[str]:
    dizoo = wheel_root() / "dizoo"
    found = []
    for family in FAMILIES:
        for path in sorted((dizoo / family).glob("**/config/**/*_config.py")):
            if POLICIES.search(path.name):
                found.append(path.relative_to(dizoo).as_posix())
    return found


SWEEP = _sweep()
RUN = [path for path in SWEEP if path not in REFUSED]


def test_the_sweep_covers_every_config_and_refuses_only_files_it_has():
    assert len(SWEEP) == 77, SWEEP  # DI-engine 0.5.3's wheel
    assert set(REFUSED) | set(_POLICY_TYPES) <= set(SWEEP), set(REFUSED) - set(SWEEP)
    registered = [path for path, name in _POLICY_TYPES.items() if name in POLICY_REGISTRY]
    assert len(RUN) == 46 + len(registered)


def test_every_config_that_runs_compiles_with_its_dizoo_keys():
    """Fast: the keys dizoo's configs carry (env.norm_obs, env.rew_clip, env.continuous, policy.command,
    PPO's learn.update_per_collect, env.manager.shared_memory with the base manager, ...) compile."""
    for path in RUN:
        main, create = read_dizoo_config(path)
        cfg = compile_config(main, seed=0, auto=True, create_cfg=create, save_cfg=False)
        assert cfg.env.type == "gymnasium" and cfg.policy.type == create.policy.type, path


@pytest.mark.parametrize("path", sorted(REFUSED))
def test_a_refused_config_is_refused_by_name(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    error, message = REFUSED[path]
    main, create = read_dizoo_config(path)
    entry = serial_pipeline_onpolicy if is_on_policy(main, create) else serial_pipeline
    with pytest.raises(error, match=message):
        entry((main, create), seed=0, max_env_step=ENV_STEPS)


@pytest.mark.slow
@pytest.mark.parametrize("path", RUN)
def test_a_config_compiles_and_runs_2000_env_steps(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main, create = read_dizoo_config(path)
    # A uniform warm-up longer than the budget (dizoo's MuJoCo SAC configs: 10,000 steps; TD3 and
    # DDPG: 25,000) is cut to it: collected whole before the first gradient step (as DI-engine does),
    # it made these runs take 5-12 times their budget in random steps and train once either way.
    unroll_len = main.policy.get("unroll_len", 1)
    if main.policy.get("random_collect_size", 0) * unroll_len > ENV_STEPS:
        main.policy.random_collect_size = -(-ENV_STEPS // unroll_len)
    # The evaluations (before training and at the end) run one episode in one env: dizoo's 5-10
    # evaluator envs, each a process, playing 1,000-step MuJoCo episodes, cost more than the
    # 2,000 steps of training itself, and test nothing the one episode does not.
    main.env.evaluator_env_num = main.env.n_evaluator_episode = 1
    on_policy = is_on_policy(main, create)
    entry = serial_pipeline_onpolicy if on_policy else serial_pipeline
    entry((main, create), seed=0, max_env_step=ENV_STEPS)
    (result_file,) = Path(tmp_path).glob("**/result.json")  # exp_name may be nested (impala_log/...)
    result = json.loads(result_file.read_text())
    assert "error" not in result, result
    assert result["env_steps"] >= ENV_STEPS or result["stop"], result
    assert math.isfinite(result["last_eval_return"]), result
    # Off-policy configs collect random_collect_size steps before the first gradient step, as
    # DI-engine does: those whose warm-up fills the budget (cut above) may not train; every other
    # config trains within it. The size counts train samples: IMPALA's are unrolls of unroll_len.
    random_steps = main.policy.get("random_collect_size", 0) * unroll_len
    if on_policy or random_steps < ENV_STEPS:
        assert result["train_iter"] > 0, result
