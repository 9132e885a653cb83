"""examples/task_dqn.py writes out what ``serial_pipeline`` builds: the same stages, and the same run."""

import copy
import importlib.util
from pathlib import Path

import pytest

from ding_ray.configs.cartpole_dqn import create_config, main_config
from ding_ray.entry import read_result, serial_pipeline
from ding_ray.framework import Task, stage_name

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "task_dqn.py"


def load_example():
    spec = importlib.util.spec_from_file_location("task_dqn_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record_stages(monkeypatch) -> list[list[str]]:
    """Patch ``Task`` so that ``use`` notes each task's stage names and ``run``, instead of running,
    appends the task's list to the list returned."""
    used: dict[int, list[str]] = {}
    built: list[list[str]] = []
    use = Task.use

    def noting_use(self, fn, lock=False):
        used.setdefault(id(self), []).append(stage_name(fn))
        return use(self, fn, lock)

    monkeypatch.setattr(Task, "use", noting_use)
    monkeypatch.setattr(Task, "run", lambda self, max_step=None: built.append(used.get(id(self), [])))
    return built


def test_the_example_lists_the_stages_serial_pipeline_builds(tmp_path, monkeypatch):
    """Both build their task on real components; ``Task.run`` records the stages instead of running."""
    monkeypatch.chdir(tmp_path)
    built = record_stages(monkeypatch)
    load_example().main(seed=0, max_env_step=1000)
    main = copy.deepcopy(main_config)
    main["exp_name"] = "through_serial_pipeline"
    serial_pipeline((main, create_config), seed=0, max_env_step=1000)
    assert len(built) == 2 and built[0] == built[1], built
    assert built[0][0] == "random_collector" and built[0][-1] == "termination_checker"


@pytest.mark.slow
def test_the_example_runs_step_for_step_as_serial_pipeline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    example = load_example().main(seed=0, max_env_step=8000, stop_value=150)
    main = copy.deepcopy(main_config)
    main["env"]["stop_value"] = 150
    main["exp_name"] = "through_serial_pipeline"
    serial_pipeline((main, create_config), seed=0, max_env_step=8000)
    entry = read_result("through_serial_pipeline")
    assert example["stop"] and example["best_eval_return"] >= 150, example
    for key in ("env_steps", "train_iter", "best_eval_return", "last_eval_return"):
        assert example[key] == entry[key], key
    ckpt = tmp_path / "task_dqn_seed0" / "ckpt"
    assert {"ckpt_best.pth.tar", "ckpt_final.pth.tar", "iteration_0.pth.tar"} <= {
        p.name for p in ckpt.iterdir()
    }
