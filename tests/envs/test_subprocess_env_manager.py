"""The subprocess env managers, with real worker processes and real gymnasium envs."""

from __future__ import annotations

import copy
import gc
import json
import os
import subprocess
import sys
import textwrap
import time
from functools import partial

import gymnasium as gym
import numpy as np
import pytest

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.config import ConfigError, compile_config
from ding_ray.envs import (
    AsyncSubprocessEnvManager,
    BaseEnvManager,
    GymnasiumEnv,
    SyncSubprocessEnvManager,
    create_env_manager,
    get_vec_env_setting,
)
from ding_ray.envs.subprocess_env_manager import default_context
from ding_ray.errors import EnvError
from tests.fakes import CountdownEnv


class HangEnv(CountdownEnv):
    """Countdown that never returns from step ``hang_at`` (or from its first reset) of an episode
    seeded with ``hang_seed``: a replacement worker, seeded apart, runs normally. The tests seed it
    with ``dynamic_seed=False``, so that each episode's seed is the env's own (a dynamic seed starts
    each episode from ``seed + 100 * k``)."""

    def __init__(self, length: int = 5, hang_at: int = 3, hang_seed: int = 0, on: str = "step"):
        super().__init__(length)
        self.hang_at, self.hang_seed, self.on = hang_at, hang_seed, on
        self._seed = None

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._seed = seed
        if self.on == "reset" and self._seed == self.hang_seed:
            time.sleep(3600)
        return super().reset(seed=seed, options=options)

    def step(self, action):
        if self.on == "step" and self._seed == self.hang_seed and self._t + 1 == self.hang_at:
            time.sleep(3600)
        if self.on == "exit" and self._seed == self.hang_seed and self._t + 1 == self.hang_at:
            os._exit(3)  # the worker process dies without a word
        return super().step(action)


class SlowEnv(CountdownEnv):
    """Countdown whose steps take ``delay`` seconds."""

    def __init__(self, length: int = 5, delay: float = 0.0):
        super().__init__(length)
        self.delay = delay

    def step(self, action):
        time.sleep(self.delay)
        return super().step(action)


for _id, _cls in (("HangCountdown-v0", HangEnv), ("SlowCountdown-v0", SlowEnv)):
    if _id not in gym.envs.registry:
        gym.register(_id, entry_point=_cls, max_episode_steps=100)


def env_fns(env_id, n, **kwargs):
    cfg = dict(env_id=env_id, collector_env_num=n, evaluator_env_num=1, kwargs=kwargs)
    env_fn, cfgs, _ = get_vec_env_setting(cfg)
    return [partial(env_fn, cfg=c) for c in cfgs]


def make(kind, env_id="Countdown-v0", n=2, env_kwargs=None, **manager):
    return create_env_manager(dict(type=kind, **manager), env_fns(env_id, n, **(env_kwargs or {})))


def run(manager, steps, action=0):
    out = []
    for _ in range(steps):
        obs = manager.ready_obs
        out.append((obs, manager.step({i: action for i in obs})))
    return out


def pid_gone(pid, wait=3.0):
    """True once ``pid`` no longer exists (a zombie counts as still there)."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("X",):
            return True
        time.sleep(0.02)
    return False


def test_sync_subprocess_matches_base_on_cartpole():
    """Same static seeds, same actions: the same observations, rewards, dones and next observations.
    (Dynamic seeds draw episode seeds from numpy's global generator, one per process: see the
    manager's docstring.)"""
    runs = {}
    for kind in ("base", "subprocess"):
        m = make(kind, "CartPole-v1", n=3)
        m.seed(5, dynamic_seed=False)
        m.launch()
        rng = np.random.default_rng(0)
        history = []
        for _ in range(150):
            obs = m.ready_obs
            ts = m.step({i: int(rng.integers(2)) for i in obs})
            history.append(
                [(i, t.obs.tolist(), t.reward, t.done) for i, t in ts.items()]
                + [(i, o.tolist()) for i, o in m.ready_obs.items()]
            )
        history.append([m.random_action(i) for i in range(3) for _ in range(5)])
        runs[kind] = history
        m.close()
    assert runs["base"] == runs["subprocess"]
    assert sum(t[3] for step in runs["base"][:-1] for t in step if len(t) == 4) > 0  # episodes did end


@pytest.mark.parametrize(
    "kind,manager",
    [
        ("subprocess", dict()),
        ("subprocess", dict(shared_memory=False)),
        ("subprocess", dict(reset_inplace=True, copy_on_get=False)),
        ("async_subprocess", dict(wait_num=2)),
    ],
)
def test_auto_reset_keeps_final_obs_and_next_episode_is_ready(kind, manager):
    m = make(kind, "Countdown-v0", n=2, **manager)
    m.seed(0)
    m.launch()
    first = {i: o.copy() for i, o in m.ready_obs.items()}  # copy_on_get=False hands out views
    finals = {}
    while len(finals) < 2:
        for env_id, ts in m.step({i: 0 for i in m.ready_obs}).items():
            if ts.done:
                finals[env_id] = ts
    for ts in finals.values():
        assert ts.obs[0] == 0.0 and ts.info["eval_episode_return"] == 5.0  # the final observation
        assert ts.info["truncated"] is False and not ts.info.get("abnormal")
    end = time.monotonic() + 5
    while len(m.ready_obs) < 2 and time.monotonic() < end:  # async: a reset may still be in flight
        time.sleep(0.01)
    nxt = m.ready_obs
    assert all(nxt[i][0] == 5.0 for i in range(2))  # first obs of the next episode
    assert all(nxt[i][1] != first[i][1] for i in range(2))  # dynamic seed: a new episode
    m.close()


def test_seeding_static_and_dynamic():
    def starts(dynamic):
        m = make("subprocess", n=3)
        m.seed(7, dynamic_seed=dynamic)
        m.launch()
        a = [m.ready_obs[i][1] for i in range(3)]
        run(m, 5)
        b = [m.ready_obs[i][1] for i in range(3)]
        m.reset()
        c = [m.ready_obs[i][1] for i in range(3)]
        m.close()
        return a, b, c

    a, b, _ = starts(True)
    assert len(set(a)) == 3 and a != b
    static = starts(False)
    assert static[0] == static[1] == static[2]


@pytest.mark.parametrize("kind", ["subprocess", "async_subprocess"])
def test_crashing_env_is_reset_counted_and_others_continue(kind):
    m = make(kind, "CountdownCrash-v0", n=2)
    m.seed(0)
    m.launch()
    history = []
    while sum(ts.done and not ts.info.get("abnormal") for _, tss in history for ts in tss.values()) < 2:
        history += run(m, 1)
    assert m.error_count == 2  # both envs raise once, at step 3 of their first episode
    abnormal = [ts for _, tss in history for ts in tss.values() if ts.info.get("abnormal")]
    assert len(abnormal) == 2 and all("simulated env crash" in ts.info["error"] for ts in abnormal)
    finished = [ts for _, tss in history for ts in tss.values() if ts.done and not ts.info.get("abnormal")]
    assert all(ts.info["eval_episode_return"] == 5.0 for ts in finished)
    m.close()


def test_worker_that_dies_is_replaced_and_counted():
    m = make("subprocess", "HangCountdown-v0", n=2, env_kwargs=dict(on="exit"))
    m.seed(0, dynamic_seed=False)  # env 0 is seeded 0: its worker exits at step 3
    m.launch()
    before = m.worker_pids
    history = run(m, 6)
    abnormal = [(i, ts) for _, tss in history for i, ts in tss.items() if ts.info.get("abnormal")]
    assert [i for i, _ in abnormal] == [0] and "died" in abnormal[0][1].info["error"]
    assert m.error_count == 1 and m.worker_pids[0] != before[0] and m.worker_pids[1] == before[1]
    assert pid_gone(before[0])
    assert sum(1 for _, tss in history for i, ts in tss.items() if i == 1) == 6  # env 1 never stopped
    m.close()


def test_hanging_env_is_killed_after_step_timeout_and_replaced():
    m = make("subprocess", "HangCountdown-v0", n=2, step_timeout=0.5)
    m.seed(0, dynamic_seed=False)  # env 0 hangs at step 3 of its first episode; its replacement: seed 1000
    m.launch()
    hung_pid = m.worker_pids[0]
    start = time.monotonic()
    history = run(m, 8)
    assert time.monotonic() - start < 5
    abnormal = [(i, ts) for _, tss in history for i, ts in tss.items() if ts.info.get("abnormal")]
    assert [i for i, _ in abnormal] == [0] and "TimeoutError" in abnormal[0][1].info["error"]
    assert m.error_count == 1 and pid_gone(hung_pid)
    done_0 = [ts for _, tss in history for i, ts in tss.items() if i == 0 and ts.done]
    done_0 = [ts for ts in done_0 if not ts.info.get("abnormal")]
    assert done_0 and done_0[0].info["eval_episode_return"] == 5.0  # the new worker runs full episodes
    m.close()


def test_hanging_reset_is_killed_after_reset_timeout():
    m = make("subprocess", "HangCountdown-v0", n=2, reset_timeout=0.5, env_kwargs=dict(on="reset"))
    m.seed(0, dynamic_seed=False)
    m.launch()  # env 0's first reset hangs; a new worker (seeded 1000) resets fine
    assert sorted(m.ready_obs) == [0, 1] and m.error_count == 1
    m.close()


def test_async_returns_early_and_keeps_slow_envs_in_flight():
    fns = [
        partial(GymnasiumEnv, cfg=dict(env_id="SlowCountdown-v0", kwargs=dict(delay=d))) for d in (0.4, 0.0)
    ]
    m = AsyncSubprocessEnvManager(fns, dict(wait_num=1, step_wait_timeout=0.01))
    m.launch()
    start = time.monotonic()
    ts = m.step({0: 0, 1: 0})
    assert time.monotonic() - start < 0.3 and list(ts) == [1]
    assert list(m.ready_obs) == [1]  # env 0 is still stepping
    fast_steps = 1
    while 0 not in ts:
        ts = m.step({i: 0 for i in m.ready_obs})
        fast_steps += 1 in ts
    assert fast_steps >= 3  # env 1 went on stepping meanwhile
    assert ts[0].obs[0] == 4.0 and not ts[0].done
    m.close()


def test_async_hanging_env_does_not_stop_the_others():
    m = make("async_subprocess", "HangCountdown-v0", n=2, step_timeout=1.0, wait_num=1)
    m.seed(0, dynamic_seed=False)
    m.launch()
    steps = {0: 0, 1: 0}
    abnormal_after = None
    start = time.monotonic()
    while abnormal_after is None:
        for i, ts in m.step({i: 0 for i in m.ready_obs}).items():
            steps[i] += 1
            if ts.info.get("abnormal"):
                abnormal_after = steps[1]
    assert i == 0 and m.error_count == 1 and time.monotonic() - start < 5
    assert abnormal_after > 10  # env 1 kept stepping while env 0 hung
    m.close()


def test_close_ends_every_worker_and_gc_too():
    m = make("async_subprocess", n=2)
    m.launch()
    m.step({i: 0 for i in m.ready_obs})  # leave steps in flight
    pids = m.worker_pids
    m.close()
    assert all(pid_gone(p) for p in pids)
    m.launch()  # a closed manager starts again
    assert sorted(m.ready_obs) == [0, 1]
    pids = m.worker_pids
    del m
    gc.collect()
    assert all(pid_gone(p) for p in pids)


def test_config_keys_unknown_and_refused():
    with pytest.raises(ConfigError, match="wait_nun.*wait_num"):
        make("async_subprocess", wait_nun=1)
    with pytest.raises(ConfigError, match="async_subprocess"):
        make("subprocess", wait_num=2)
    with pytest.raises(ConfigError, match="async_subprocess"):
        make("subprocess", step_wait_timeout=0.1)
    with pytest.raises(ConfigError, match="auto_reset"):
        make("subprocess", reset_inplace=True, auto_reset=False)
    with pytest.raises(ConfigError, match="context"):
        make("subprocess", context="threads")
    with pytest.raises(ConfigError, match="retry_type"):
        make("subprocess", retry_type="again")


def test_default_configs_carry_every_di_engine_key():
    di_engine_keys = {
        "episode_num", "max_retry", "retry_type", "auto_reset", "step_timeout", "reset_timeout",
        "retry_waiting_time", "shared_memory", "copy_on_get", "context", "wait_num", "step_wait_timeout",
        "connect_timeout", "reset_inplace",
    }  # fmt: skip
    for cls in (SyncSubprocessEnvManager, AsyncSubprocessEnvManager):
        assert di_engine_keys <= set(cls.default_config())
    base_keys = {"episode_num", "max_retry", "retry_type", "auto_reset", "step_timeout", "reset_timeout"}
    assert base_keys | {"retry_waiting_time"} <= set(BaseEnvManager.default_config())
    assert SyncSubprocessEnvManager.default_config().wait_num == float("inf")
    assert AsyncSubprocessEnvManager.default_config().wait_num == 2
    main = dict(env=dict(env_id="CartPole-v1", manager=dict(copy_on_get=False)), policy=dict())
    create = dict(env=dict(type="gymnasium"), env_manager=dict(type="subprocess"), policy=dict(type="dqn"))
    cfg = compile_config(main, create_cfg=create, save_cfg=False)
    assert cfg.env.manager.type == "subprocess" and cfg.env.manager.copy_on_get is False
    assert cfg.env.manager.cfg_type == "SyncSubprocessEnvManagerDict"


def test_envs_are_not_in_this_process():
    m = make("subprocess", n=1)
    with pytest.raises(EnvError, match="random_action"):
        m.envs  # noqa: B018
    m.seed(3)
    assert m.action_space.contains(m.random_action(0))
    m.close()


@pytest.mark.parametrize("kind", ["subprocess", "async_subprocess"])
def test_serial_pipeline_runs_with_subprocess_envs(tmp_path, kind):
    from ding_ray.entry import serial_pipeline
    from tests.entry.test_serial_pipeline import MAIN

    os.chdir(tmp_path)
    main = copy.deepcopy(MAIN)
    main["policy"]["random_collect_size"] = 8  # random actions drawn by the manager
    create = dict(env=dict(type="gymnasium"), env_manager=dict(type=kind), policy=dict(type="dqn"))
    serial_pipeline((main, create), seed=0, max_env_step=60)
    result = json.load(open("serial_test/result.json"))
    assert result["env_steps"] >= 60 and result["last_eval_return"] == 5.0


# A dizoo-style script: config and run at module level, no ``if __name__ == "__main__":`` guard.
NO_GUARD_SCRIPT = """
import json
from ding_ray.entry import serial_pipeline
from ding_ray.envs import SyncSubprocessEnvManager, create_env_manager, get_vec_env_setting

main_config = dict(
    exp_name="no_guard",
    env=dict(env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=2, n_evaluator_episode=2),
    policy=dict(model=dict(obs_shape=4, action_shape=2), collect=dict(n_sample=32)),
)
create_config = dict(env=dict(type="gymnasium"), env_manager=dict(type="subprocess"), policy=dict(type="dqn"))
serial_pipeline((main_config, create_config), seed=0, max_env_step=200)
env_fn, cfgs, _ = get_vec_env_setting(main_config["env"])
manager = create_env_manager(dict(type="subprocess"), [lambda c=c: env_fn(cfg=c) for c in cfgs])
manager.launch()
print(json.dumps(dict(context=manager.context, ready=sorted(manager.ready_obs))))
manager.close()
"""


def test_a_script_without_main_guard_runs_with_subprocess_envs(tmp_path):
    """Workers are forked (as DI-engine's), so nothing imports the script again: with a fork server
    or spawn this script would start itself in every worker and the workers would die."""
    (tmp_path / "no_guard.py").write_text(textwrap.dedent(NO_GUARD_SCRIPT))
    run = subprocess.run(
        [sys.executable, "no_guard.py"], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == '{"context": "fork", "ready": [0, 1]}'
    assert json.load(open(tmp_path / "no_guard" / "result.json"))["env_steps"] >= 200


def test_start_method_is_chosen_or_given():
    m = make("subprocess", n=1)
    assert m.context == default_context()  # 'fork' (the script above) unless this session runs Ray
    m.close()
    m = make("subprocess", n=1, context="forkserver")
    m.launch()
    assert m.context == "forkserver" and sorted(m.ready_obs) == [0]
    m.close()


def test_an_env_class_that_came_by_value_reaches_fork_server_workers():
    """In a Ray actor an env class of the driver's script came by value: it names ``__main__`` as its
    module but is not there, so pickle cannot send its registration to the workers; it goes by value
    too, and the workers a fork server starts build the env."""
    script_env = type("ScriptCountdown", (CountdownEnv,), {"__module__": "__main__"})
    gym.register("ScriptCountdown-v0", entry_point=script_env, max_episode_steps=100)
    try:
        m = make("subprocess", env_id="ScriptCountdown-v0", n=1, context="forkserver", max_retry=1)
        m.launch()
        assert sorted(m.ready_obs) == [0]
        m.close()
    finally:
        del gym.envs.registry["ScriptCountdown-v0"]
