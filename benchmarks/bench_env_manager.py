"""Env steps per second of the env managers: ``base`` (one process) against ``subprocess`` and
``async_subprocess`` (a worker process per env), measured in one run.

Rows, each with 2 envs (one per core of a 2-core machine):
  busy_1ms   an env whose step burns about 1 ms of CPU (a fixed amount of pure-Python work,
             calibrated here to 1 ms; no sleeping), the case worker processes are for
  cartpole   gymnasium CartPole-v1, microseconds per step: the pipe round trip dominates
Actions are fixed (no policy), so the figures are the managers' own. On busy_1ms a ``ceiling``
row runs the same work in 2 plain processes with nothing in between: what the cores give in
parallel at that moment, which no manager can beat. The three managers are
timed in turns, window after window (other load on the machine hits them alike), and each
figure is the best of its ``--windows`` windows; ratios are to ``base`` on the same env.

Run:  python benchmarks/bench_env_manager.py [--seconds 1] [--windows 5]
Prints one ``bench_env_manager name=value ...`` line per figure and writes them to
``benchmarks/results/env_manager.json``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from functools import partial

import gymnasium as gym
import numpy as np
from results_io import write_result

from ding_ray.envs import GymnasiumEnv, create_env_manager

ENV_NUM = 2
KINDS = ("base", "subprocess", "async_subprocess")


def burn(n: int) -> int:
    """``n`` iterations of integer arithmetic: CPU work that a signal or a pipe cannot shorten."""
    x = 0
    for k in range(n):
        x = (x + k * k) % 1_000_003
    return x


class BusyEnv(gym.Env):
    """Each step does ``work`` iterations of ``burn``; episodes last 200 steps."""

    def __init__(self, work: int = 1000):
        self.work = work
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self.np_random.uniform(-1, 1, 4).astype(np.float32), {}

    def step(self, action):
        burn(self.work)
        self._t += 1
        obs = self.np_random.uniform(-1, 1, 4).astype(np.float32)
        return obs, 1.0, False, self._t >= 200, {}


if "BusyWork-v0" not in gym.envs.registry:
    gym.register("BusyWork-v0", entry_point=BusyEnv)


def calibrate(target_s: float = 1e-3) -> tuple[int, float]:
    """The ``burn`` length that takes ``target_s`` here, and the time of one such step. The
    fastest of many tries is taken: other load only ever makes a try slower."""

    def fastest(n: int) -> float:
        seconds = []
        for _ in range(50):
            start = time.perf_counter()
            burn(n)
            seconds.append(time.perf_counter() - start)
        return min(seconds)

    probe = 20_000
    work = int(probe * target_s / fastest(probe))
    return work, fastest(work)


def _burn_worker(conn, work: int) -> None:
    """Ceiling process: on each request, burn ``work``-sized steps for that many seconds, say how many."""
    while (duration := conn.recv()) is not None:
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < duration:
            burn(work)
            steps += 1
        conn.send(steps)


class Ceiling:
    """``ENV_NUM`` plain processes burning the env's work with no env, pipe or manager in between:
    what this machine's cores give in parallel right now. The managers can only approach it (on a
    2-vCPU VM whose vCPUs share a physical core, two busy processes run slower than one)."""

    def __init__(self, work: int) -> None:
        ctx = mp.get_context("spawn")
        self._conns, self._procs = [], []
        for _ in range(ENV_NUM):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_burn_worker, args=(child, work), daemon=True)
            proc.start()
            self._conns.append(parent)
            self._procs.append(proc)

    def window(self, duration: float) -> float:
        for conn in self._conns:
            conn.send(duration)
        return sum(conn.recv() for conn in self._conns) / duration

    def close(self) -> None:
        for conn, proc in zip(self._conns, self._procs):
            conn.send(None)
            proc.join()


def steps_per_s(env_cfg: dict, seconds: float, windows: int, work: int | None = None) -> dict[str, float]:
    """Best env steps/s of each manager kind over ``windows`` windows taken in turns, so that
    other load on the machine hits every kind alike (with ``work``, the parallel ceiling too)."""
    managers = {}
    for kind in KINDS:
        fns = [partial(GymnasiumEnv, cfg=env_cfg) for _ in range(ENV_NUM)]
        managers[kind] = create_env_manager(dict(type=kind), fns)
        managers[kind].seed(0)
        managers[kind].launch()
    action = 0

    def window(manager, duration: float) -> float:
        nonlocal action
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < duration:
            action ^= 1
            steps += len(manager.step({i: action for i in manager.ready_obs}))
        return steps / (time.perf_counter() - start)

    ceiling = Ceiling(work) if work is not None else None
    best = dict.fromkeys(KINDS, 0.0)
    for kind in KINDS:
        window(managers[kind], 0.2)  # warm-up
    for _ in range(windows):
        for kind in KINDS:
            best[kind] = max(best[kind], window(managers[kind], seconds))
        if ceiling is not None:
            best["ceiling"] = max(best.get("ceiling", 0.0), ceiling.window(seconds))
    for manager in managers.values():
        manager.close()
    if ceiling is not None:
        ceiling.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one window")
    parser.add_argument("--windows", type=int, default=5, help="windows per manager kind")
    args = parser.parse_args()
    work, step_s = calibrate()
    print(f"bench_env_manager busy_1ms_step_cpu_ms={step_s * 1e3:.3f} work={work}")
    envs = {
        "busy_1ms": dict(env_id="BusyWork-v0", kwargs=dict(work=work)),
        "cartpole": dict(env_id="CartPole-v1"),
    }
    rows, ratio = [], {}
    for name, env_cfg in envs.items():
        rates = steps_per_s(env_cfg, args.seconds, args.windows, work if name == "busy_1ms" else None)
        for kind, rate in rates.items():
            text = ""
            if kind != "base":
                ratio[f"{name} {kind}/base"] = round(rate / rates["base"], 3)
                text = f" ratio_to_base={rate / rates['base']:.3f}"
            if "ceiling" in rates and kind in ("subprocess", "async_subprocess"):
                ratio[f"{name} {kind}/ceiling"] = round(rate / rates["ceiling"], 3)
                text += f" ratio_to_ceiling={rate / rates['ceiling']:.3f}"
            rows.append(dict(env=name, manager=kind, envs=ENV_NUM, steps_per_s=round(rate)))
            print(f"bench_env_manager {name}_{kind}_steps_per_s={rate:.0f} envs={ENV_NUM}{text}")
    reference = (
        "measured in the same run: the 'base' manager on the same env, and on busy_1ms the 'ceiling', "
        f"{ENV_NUM} plain processes doing the same work with nothing in between (busy_1ms step: "
        f"{step_s * 1e3:.3f} ms of CPU)"
    )
    write_result("env_manager", rows, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
