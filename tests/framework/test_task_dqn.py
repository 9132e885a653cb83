"""examples/task_dqn.py's pipeline, run with a small budget: the middleware stages learn together."""

import importlib.util
import os
import time
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "task_dqn.py"


def load_example():
    spec = importlib.util.spec_from_file_location("task_dqn_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_task_dqn_pipeline_learns_cartpole(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    example = load_example()
    start = time.perf_counter()
    ctx = example.main(seed=0, max_env_step=8000, stop_value=150)
    seconds = time.perf_counter() - start
    assert ctx.last_eval_value >= 150, (
        f"no evaluation reached 150 in {ctx.env_step} env steps ({seconds:.0f} s)"
    )
    assert ctx.train_iter > 0 and ctx.last_eval_iter == ctx.train_iter  # the run ended at that evaluation
    ckpt = tmp_path / "task_dqn_seed0" / "ckpt"
    assert {"eval.pth.tar", "final.pth.tar", "iteration_0.pth.tar"} <= set(os.listdir(ckpt))
