"""An env that hangs in ``step``: past ``env.manager.step_timeout`` it is interrupted (``'base'``,
SIGALRM) or its worker process killed (``'subprocess'``), replaced by a new one, the step dropped
and counted in ``collector/env_errors``, and collection goes on."""

import json
import os
import time
from functools import partial

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.entry import serial_pipeline
from ding_ray.envs import AsyncSubprocessEnvManager, GymnasiumEnv, create_env_manager
from ding_ray.errors import ConfigError
from ding_ray.policy import DQNPolicy
from ding_ray.worker import SampleSerialCollector
from ding_ray.worker.metrics import COLLECTOR_ENV_ERRORS
from tests.bad_input.configs import CREATE, small_main

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16], dueling=False)
HANG_S = 60.0  # far longer than any test may take: only the timeout can end it
TIMEOUT_S = 0.5


def hanging_env_cfg(marker: str, hang_at: int = 3):
    cfg = GymnasiumEnv.default_config()
    cfg.update(env_id="BadInputHanging-v0", kwargs=dict(marker=marker, hang_at=hang_at, hang_s=HANG_S))
    return cfg


def env_identity(manager, env_id: int):
    """The env object ('base') or the worker's process id ('subprocess'): what a replacement changes."""
    if isinstance(manager, AsyncSubprocessEnvManager):  # its sync subclass too
        return manager.worker_pids[env_id]
    return id(manager.envs[env_id])


@pytest.mark.parametrize("kind", ["base", "subprocess"])
def test_a_hanging_env_is_replaced_and_collection_goes_on(tmp_path, kind):
    marker = str(tmp_path / "hung")
    cfg = hanging_env_cfg(marker)
    manager = create_env_manager(
        dict(type=kind, step_timeout=TIMEOUT_S, retry_waiting_time=0.0), [partial(GymnasiumEnv, cfg=cfg)] * 2
    )
    manager.seed(0)
    try:
        collector = SampleSerialCollector(
            dict(n_sample=20), manager, DQNPolicy(dict(model=MODEL)).collect_mode
        )
        before = [env_identity(manager, i) for i in range(2)]
        start = time.monotonic()
        data = collector.collect(policy_kwargs={"eps": 0.5})
        assert time.monotonic() - start < HANG_S / 4
        assert os.path.exists(marker)  # one env did hang
        assert len(data) == 20 and manager.error_count == 1
        after = [env_identity(manager, i) for i in range(2)]
        assert sum(a != b for a, b in zip(before, after)) == 1  # the hung env, and only it, was replaced
        more = collector.collect(n_sample=20)  # the replacement keeps working
        assert len(more) == 20 and manager.error_count == 1
    finally:
        manager.close()


def test_serial_pipeline_with_step_timeout_survives_a_hang(tmp_path):
    os.chdir(tmp_path)
    main = small_main("hang_run", env=dict(env_id="BadInputHanging-v0", manager=dict(step_timeout=TIMEOUT_S)))
    collector_cfgs = [hanging_env_cfg(str(tmp_path / "hung"), hang_at=5) for _ in range(2)]
    evaluator_cfgs = [hanging_env_cfg(str(tmp_path / "hung"), hang_at=10**9)]  # the evaluator never hangs
    start = time.monotonic()
    serial_pipeline(
        (main, CREATE), seed=0, env_setting=[GymnasiumEnv, collector_cfgs, evaluator_cfgs], max_train_iter=10
    )
    assert time.monotonic() - start < HANG_S / 4 and os.path.exists(tmp_path / "hung")
    result = json.load(open("hang_run/result.json"))
    assert result["train_iter"] >= 10
    events = EventAccumulator("hang_run/log/serial", size_guidance={"scalars": 0})
    events.Reload()
    assert events.Scalars(COLLECTOR_ENV_ERRORS)[-1].value == 1


@pytest.mark.parametrize("value", [0, -1.0, "1s"])
def test_a_step_timeout_that_is_not_positive_seconds_is_refused(value):
    with pytest.raises(ConfigError) as err:
        create_env_manager(dict(type="base", step_timeout=value), [GymnasiumEnv])
    assert str(err.value) == f"env.manager.step_timeout must be positive seconds or None, got {value!r}."
