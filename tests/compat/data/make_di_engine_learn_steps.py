"""Record what DI-engine 0.5.3's learn mode does to a fixed batch, for ding_ray's learn-step tests.

Run with a Python that has DI-engine 0.5.3 installed (not ding_ray's environment)::

    python tests/compat/data/make_di_engine_learn_steps.py     # writes di_engine_learn_steps.json
    python tests/compat/data/make_di_engine_learn_steps.py pendulum_td3    # that case only, the rest kept

For each case below it builds DI-engine's policy from a dizoo config (seed 0) with the shipped
checkpoint's weights (``make_di_engine_checkpoints.grid_weights``: the same seeded 1/16 grid, so a
test loads them from ``di_engine_checkpoints/<checkpoint>.tar.xz``; IMPALA, which has no shipped
checkpoint, gets them in the json), makes a seeded batch whose behaviour outputs (PPO's logits and
values, A2C's values) are the model's own, calls ``learn_mode.forward`` on it
``calls`` times with ``torch.manual_seed(call)`` before each call, and records every log dict it
returns and the model's outputs on fixed observations afterwards (target networks included).

PPO runs with ``batch_size`` equal to the batch, so the minibatch shuffle, the one random draw that
DI-engine and ding_ray make differently, cannot change the result. SAC's reparameterised samples
are drawn from torch's global generator in the same order on both sides.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_di_engine_checkpoints import grid_weights  # noqa: E402

_CARTPOLE = "dizoo.classic_control.cartpole.config."
_PENDULUM = "dizoo.classic_control.pendulum.config."
BATCH = 64
NUM_OBS = 16
_NARROW_VAC = dict(encoder_hidden_size_list=[32, 32], actor_head_hidden_size=32, critic_head_hidden_size=32)
# name -> (dizoo config module, checkpoint of the initial weights, policy keys changed, learn calls)
CASES = {
    # target_update_freq=2: the target network is synced inside the recorded calls
    "cartpole_dqn": (
        _CARTPOLE + "cartpole_dqn_config",
        "cartpole_dqn",
        dict(learn=dict(target_update_freq=2)),
        5,
    ),
    "cartpole_ppo": (
        _CARTPOLE + "cartpole_ppo_config",
        "cartpole_ppo",
        dict(learn=dict(batch_size=BATCH)),
        2,
    ),
    "pendulum_ppo": (
        _PENDULUM + "pendulum_ppo_config",
        "pendulum_ppo",
        dict(learn=dict(batch_size=BATCH, epoch_per_collect=3)),
        2,
    ),
    # IMPALA: no shipped checkpoint, so its grid weights travel in the json (a narrower VAC keeps
    # them small); each sample is one unroll of unroll_len steps, ending its episode only at its end
    "cartpole_impala": (
        _CARTPOLE + "cartpole_impala_config",
        None,
        dict(
            model=dict(
                encoder_hidden_size_list=[32, 32], actor_head_hidden_size=32, critic_head_hidden_size=32
            )
        ),
        3,
    ),
    "pendulum_sac": (
        _PENDULUM + "pendulum_sac_config",
        "pendulum_sac",
        dict(learn=dict(batch_size=BATCH)),
        4,
    ),
    # the distributional Q family (3-step rewards, value_gamma, priorities; Rainbow's noise and IS
    # weights): no shipped checkpoint, a narrower encoder keeps the json's weights small
    **{
        f"cartpole_{name}": (
            _CARTPOLE + f"cartpole_{name}_config",
            None,
            dict(model=dict(encoder_hidden_size_list=[32, 32]), learn=dict(target_update_freq=2)),
            4,
        )
        for name in ("c51", "qrdqn", "iqn", "rainbow")
    },
    # TD3 and DDPG: no shipped checkpoint (a narrower actor and critics keep the json small); TD3's
    # delayed actor steps at calls 1 and 3, its smoothing noise (wider than the clip) drawn from torch's
    # global generator on both sides
    "pendulum_td3": (
        _PENDULUM + "pendulum_td3_config",
        None,
        dict(
            model=dict(actor_head_hidden_size=32, critic_head_hidden_size=32),
            learn=dict(batch_size=BATCH, noise_sigma=0.3, noise_range=dict(min=-0.2, max=0.2)),
        ),
        5,
    ),
    # A2C: no shipped checkpoint (a narrower VAC keeps the json small); two minibatches per call (the
    # shuffle is numpy's, seeded 0 on both sides), so the log is the second one's; the continuous case
    # normalises its advantages
    "cartpole_a2c": (
        _CARTPOLE + "cartpole_a2c_config",
        None,
        dict(model=_NARROW_VAC, learn=dict(batch_size=BATCH // 2)),
        3,
    ),
    "pendulum_a2c": (
        _PENDULUM + "pendulum_a2c_config",
        None,
        dict(model=_NARROW_VAC, learn=dict(batch_size=BATCH // 2, adv_norm=True)),
        3,
    ),
    "pendulum_ddpg": (
        _PENDULUM + "pendulum_ddpg_config",
        None,
        dict(model=dict(actor_head_hidden_size=32, critic_head_hidden_size=32), learn=dict(batch_size=BATCH)),
        3,
    ),
    # CQL on dizoo's offline configs: discrete (QR-DQN's n-step quantile loss, target synced inside
    # the calls) and continuous (SAC's, 10 sampled actions per state for the penalty, drawn from
    # torch's global generator in the same order on both sides); narrower nets keep the json small
    "cartpole_cql": (
        _CARTPOLE + "cartpole_cql_config",
        None,
        dict(model=dict(encoder_hidden_size_list=[32, 32]), learn=dict(target_update_freq=2)),
        4,
    ),
    "pendulum_cql": (
        _PENDULUM + "pendulum_cql_config",
        None,
        dict(model=dict(actor_head_hidden_size=32, critic_head_hidden_size=32), learn=dict(batch_size=BATCH)),
        4,
    ),
    # BC on dizoo's cartpole_bc_config: cross entropy, SGD with momentum and weight decay (the step is
    # deterministic); a narrower encoder keeps the json's weights small
    "cartpole_bc": (
        _CARTPOLE + "cartpole_bc_config",
        None,
        dict(model=dict(encoder_hidden_size_list=[32, 32])),
        3,
    ),
}
DISTRIBUTIONAL = ("c51", "qrdqn", "iqn", "rainbow")
# policy types whose batches hold n-step rewards and whose models give Q-values as 'logit'
NSTEP_Q = (*DISTRIBUTIONAL, "discrete_cql")


def build(module: str, changes: dict):
    from ding.config import compile_config
    from ding.policy import create_policy
    from ding.utils import set_pkg_seed
    from easydict import EasyDict

    config = importlib.import_module(module)
    main, create = copy.deepcopy(config.main_config), copy.deepcopy(config.create_config)
    for section, values in changes.items():
        main.policy[section].update(EasyDict(values))
    cfg = compile_config(main, create_cfg=create, auto=True, save_cfg=False, seed=0)
    set_pkg_seed(0)
    policy = create_policy(cfg.policy, enable_field=["learn", "collect", "eval"])
    state = policy.learn_mode.state_dict()
    state["model"] = grid_weights(state["model"])
    if "target_model" in state:
        state["target_model"] = state["model"]
    policy.learn_mode.load_state_dict(state)
    return policy, cfg


def impala_batch(policy, cfg, gen: torch.Generator) -> tuple[list[dict], dict]:
    """``batch_size`` unrolls as DI-engine's IMPALA collector hands them over (per unroll, each key
    a list of ``unroll_len`` steps), and the columns [T(+1), B, ...]: behaviour logits the model's
    own plus noise (so the importance weights are not 1), some unrolls ending their episode."""
    steps, size, obs_shape = cfg.policy.unroll_len, cfg.policy.learn.batch_size, cfg.policy.model.obs_shape
    obs = torch.randn(steps + 1, size, obs_shape, generator=gen)
    with torch.no_grad():
        logit = policy.learn_mode.get_attribute("learn_model").forward(
            obs[:-1].flatten(0, 1), mode="compute_actor"
        )["logit"]
    logit = logit.reshape(steps, size, -1) + 0.5 * torch.randn(steps, size, logit.shape[-1], generator=gen)
    action = torch.distributions.Categorical(logits=logit).sample()
    reward = torch.randn(steps, size, generator=gen)
    done = torch.zeros(steps, size, dtype=torch.bool)
    done[-1] = torch.rand(size, generator=gen) < 0.3
    cols = dict(obs=obs, logit=logit, action=action, reward=reward, done=done)
    rows = [
        dict(
            obs=[obs[t, b] for t in range(steps)],
            next_obs=[obs[t + 1, b] for t in range(steps)],
            action=[action[t, b] for t in range(steps)],
            logit=[logit[t, b] for t in range(steps)],
            reward=[reward[t, b] for t in range(steps)],
            done=[done[t, b] for t in range(steps)],
        )
        for b in range(size)
    ]
    return rows, cols


def batch(policy, cfg, gen: torch.Generator) -> tuple[list[dict], dict]:
    """A batch of ``BATCH`` transitions as DI-engine's collectors hand them over, and its columns."""
    if cfg.policy.type == "impala":
        return impala_batch(policy, cfg, gen)
    model, obs_shape = policy.learn_mode.get_attribute("learn_model"), cfg.policy.model.obs_shape
    obs, next_obs = torch.randn(BATCH, obs_shape, generator=gen), torch.randn(BATCH, obs_shape, generator=gen)
    reward = torch.randn(BATCH, generator=gen) - 1.0
    done = torch.rand(BATCH, generator=gen) < 0.1
    cols = dict(obs=obs, next_obs=next_obs, reward=reward, done=done)
    policy_type = cfg.policy.type
    if policy_type in ("ppo", "a2c"):
        with torch.no_grad():
            out = model.forward(obs, mode="compute_actor_critic")
        cols["value"] = out["value"]
        if policy_type == "ppo":
            cols["traj_flag"] = done | (torch.arange(BATCH) % 16 == 15)
        else:  # A2C's collector computed them
            cols["adv"] = torch.randn(BATCH, generator=gen)
        if cfg.policy.action_space == "continuous":
            mu, sigma = out["logit"]["mu"], out["logit"]["sigma"]
            if policy_type == "ppo":
                cols["logit"] = dict(mu=mu, sigma=sigma)
            cols["action"] = mu + sigma * torch.randn(mu.shape, generator=gen)
        else:
            if policy_type == "ppo":
                cols["logit"] = out["logit"]
            cols["action"] = torch.distributions.Categorical(logits=out["logit"]).sample()
    elif policy_type in ("sac", "td3", "ddpg", "cql"):
        cols["action"] = torch.rand(BATCH, cfg.policy.model.action_shape, generator=gen) * 2 - 1
    else:
        cols["action"] = torch.randint(cfg.policy.model.action_shape, (BATCH,), generator=gen)
    if policy_type in NSTEP_Q:
        # n-step rewards [B, nstep]; some windows cut short by the end of the data (value_gamma)
        nstep, gamma = cfg.policy.nstep, cfg.policy.discount_factor
        cols["reward"] = torch.randn(BATCH, nstep, generator=gen) - 1.0
        steps = torch.where(torch.rand(BATCH, generator=gen) < 0.2, 1, nstep)
        cols["value_gamma"] = gamma ** steps.float()
        cols["IS"] = torch.rand(BATCH, generator=gen) + 0.5
    rows = []
    for i in range(BATCH):
        row = {}
        for key, value in cols.items():
            if isinstance(value, dict):
                row[key] = {k: v[i] for k, v in value.items()}
            elif key == "reward":
                row[key] = value[i] if value.dim() == 2 else value[i : i + 1]
            else:
                row[key] = value[i]
        rows.append(row)
    return rows, cols


def outputs(policy, cfg, obs: torch.Tensor, action: torch.Tensor) -> dict:
    """What the learned model (and its target) computes on fixed inputs, as plain lists."""
    out = {}
    models = {"model": policy.learn_mode.get_attribute("learn_model")}
    try:
        target = policy.learn_mode.get_attribute("target_model")
        if cfg.policy.type == "td3":  # the target sits in an action-noise wrapper: the network itself
            target = copy.deepcopy(policy.learn_mode.get_attribute("model"))
            target.load_state_dict(policy.learn_mode.state_dict()["target_model"])
        models["target"] = target
    except NotImplementedError:  # an on-policy learner keeps no target network
        pass
    with torch.no_grad():
        for name, model in models.items():
            if cfg.policy.type == "impala":
                both = model.forward(obs, mode="compute_actor_critic")
                out[f"{name}.logit"], out[f"{name}.value"] = both["logit"], both["value"]
            elif cfg.policy.type in ("dqn", "bc") or cfg.policy.type in NSTEP_Q:
                out[f"{name}.q"] = model.forward(obs)["logit"]
            elif cfg.policy.type in ("ppo", "a2c"):
                both = model.forward(obs, mode="compute_actor_critic")
                logit = both["logit"]
                if isinstance(logit, dict):
                    out[f"{name}.mu"], out[f"{name}.sigma"] = logit["mu"], logit["sigma"]
                else:
                    out[f"{name}.logit"] = logit
                out[f"{name}.value"] = both["value"]
            else:
                actor = model.forward(obs, mode="compute_actor")
                if "action" in actor:  # TD3's and DDPG's deterministic actor
                    out[f"{name}.action"] = actor["action"]
                else:
                    out[f"{name}.mu"], out[f"{name}.sigma"] = actor["logit"]
                q = model.forward({"obs": obs, "action": action}, mode="compute_critic")["q_value"]
                for i, qi in enumerate(q if isinstance(q, list) else [q]):
                    out[f"{name}.q{i}"] = qi
    return {k: v.tolist() for k, v in out.items()}


def scalars(info: dict, priority: bool) -> dict:
    """The log dict's numbers, and (``priority``) its per-sample priorities."""
    # timings (BC's forward_time, ...) differ run to run: not part of the step
    out = {
        k: float(torch.as_tensor(v).detach())
        for k, v in info.items()
        if np.ndim(v) == 0 and not k.endswith("_time")
    }
    if priority:
        out["priority"] = [float(p) for p in info["priority"]]
    return out


def short(x):
    """Floats with the 9 significant digits that give a float32 back exactly (a smaller file)."""
    if isinstance(x, dict):
        return {k: short(v) for k, v in x.items()}
    if isinstance(x, list):
        return [short(v) for v in x]
    return float(f"{x:.9g}") if isinstance(x, float) else x


def main() -> None:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "di_engine_learn_steps.json")
    # case names given: record those again and keep the file's other cases
    names = sys.argv[1:] or list(CASES)
    result = json.loads(open(path).read()) if sys.argv[1:] else {}
    for name in names:
        module, checkpoint, changes, calls = CASES[name]
        policy, cfg = build(module, changes)
        init_state = {
            k: dict(shape=list(v.shape), sixteenths=(v * 16).round().int().flatten().tolist())
            for k, v in policy.learn_mode.get_attribute("learn_model").state_dict().items()
        }
        gen = torch.Generator().manual_seed(1)
        logs, batches = [], []
        for call in range(calls):
            rows, cols = batch(policy, cfg, gen)
            batches.append(
                {
                    k: ({kk: vv.tolist() for kk, vv in v.items()} if isinstance(v, dict) else v.tolist())
                    for k, v in cols.items()
                }
            )
            torch.manual_seed(call)
            info = policy.learn_mode.forward(rows)
            priority = cfg.policy.type in DISTRIBUTIONAL
            infos = info if isinstance(info, list) else [info]
            logs.append([scalars(i, priority) for i in infos])  # one per gradient step
        obs = torch.randn(NUM_OBS, cfg.policy.model.obs_shape, generator=gen)
        action = torch.rand(NUM_OBS, cfg.policy.model.action_shape, generator=gen) * 2 - 1
        torch.manual_seed(calls)  # IQN's forward draws its quantile fractions
        result[name] = dict(
            config=module.removeprefix("dizoo.").replace(".", "/") + ".py",
            checkpoint=checkpoint,
            # no checkpoint: the initial weights, in 1/16 units
            init_state=None if checkpoint else init_state,
            changes=changes,
            batches=batches,
            logs=logs,
            obs=obs.tolist(),
            action=action.tolist(),
            outputs=outputs(policy, cfg, obs, action),
        )
        print(name, "calls", calls, "log dicts", sum(len(x) for x in logs))
    with open(path, "w") as f:
        json.dump(short(result), f, separators=(",", ":"))
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
