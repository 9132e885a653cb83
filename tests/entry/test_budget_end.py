"""A budget ends a serial run where DI-engine's serial entries end it: they check it at the end of
their loop, after training, so the weights of the iteration that spends it are never evaluated,
even when an evaluation falls due with them (the last evaluation is the last one due before)."""

import copy

from ding_ray.configs import cartpole_dqn, cartpole_ppo
from ding_ray.entry import read_result, serial_pipeline, serial_pipeline_onpolicy
from ding_ray.worker import InteractionSerialEvaluator


def watch_evaluations(monkeypatch) -> list[int]:
    """The train_iter of every evaluation the run makes, in order."""
    seen: list[int] = []
    evaluate = InteractionSerialEvaluator.eval

    def watched(self, save_ckpt_fn=None, train_iter=-1, envstep=-1, *args, **kwargs):
        seen.append(train_iter)
        return evaluate(self, save_ckpt_fn, train_iter, envstep, *args, **kwargs)

    monkeypatch.setattr(InteractionSerialEvaluator, "eval", watched)
    return seen


def config(module, exp_name: str, eval_freq: int) -> tuple[dict, dict]:
    main = copy.deepcopy(module.main_config)
    main["exp_name"] = exp_name
    main["env"]["stop_value"] = 10**6  # only the budget ends these runs
    main["policy"]["eval"] = dict(evaluator=dict(eval_freq=eval_freq))
    return main, copy.deepcopy(module.create_config)


def test_an_off_policy_run_ends_after_training_without_evaluating_its_last_weights(tmp_path, monkeypatch):
    # DQN: 16 gradient steps per collect (once the buffer holds a batch), an evaluation due at
    # each of them; the collect that spends the budget trains, and its weights are not evaluated
    monkeypatch.chdir(tmp_path)
    seen = watch_evaluations(monkeypatch)
    main, create = config(cartpole_dqn, "dqn_budget", eval_freq=16)
    serial_pipeline((main, create), seed=0, max_env_step=160)
    result = read_result("dqn_budget")
    assert result["env_steps"] >= 160 and result["train_iter"] >= 32 and result["train_iter"] % 16 == 0
    # DI-engine's loop: evaluate (when due), collect, train, check the budget
    assert seen == list(range(0, result["train_iter"], 16)), (seen, result["train_iter"])


def test_an_on_policy_run_ends_after_training_without_evaluating_its_last_weights(tmp_path, monkeypatch):
    # PPO: 20 gradient steps per collect of 256 env steps, an evaluation due every 40 iterations;
    # the 4th collect spends the budget at iteration 80, when the next evaluation falls due
    monkeypatch.chdir(tmp_path)
    seen = watch_evaluations(monkeypatch)
    main, create = config(cartpole_ppo, "ppo_budget", eval_freq=40)
    serial_pipeline_onpolicy((main, create), seed=0, max_env_step=4 * 256)
    result = read_result("ppo_budget")
    assert result["train_iter"] == 80, result
    assert seen == [0, 40]


def test_a_budget_within_the_random_warm_up_is_named_with_what_to_set(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    main, create = config(cartpole_dqn, "short_budget", eval_freq=1000)
    main["policy"]["random_collect_size"] = 256
    serial_pipeline((main, create), seed=0, max_env_step=200)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        "max_env_step=200 ends before training starts: the first 256 env steps fill the replay buffer "
        "(policy.random_collect_size=256), so this run trains little or not at all. Set max_env_step "
        "above 256, or lower policy.random_collect_size."
    ]
