"""MetricSerialEvaluator on a small supervised task: a linear classifier of three Gaussian blobs,
scored by accuracy on a DataLoader and on a plain list of numpy batches."""

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter

from ding_ray.errors import ConfigError, ShapeError
from ding_ray.policy import Policy
from ding_ray.worker import IMetric, MetricSerialEvaluator, create_serial_evaluator

N_CLASSES, OBS_DIM, N_DATA = 3, 4, 600
EVAL_BATCH = 64  # 600 = 9 * 64 + 24: the last batch is smaller, so a mean of batch means would be wrong


class ClassifierPolicy(Policy):
    """A supervised policy: learn mode takes an SGD step of cross-entropy, eval mode returns logits."""

    config = dict(type="test_classifier", learn=dict(learning_rate=0.05))

    def _init_learn(self) -> None:
        self._optimizer = torch.optim.SGD(self._model.parameters(), lr=self._cfg.learn.learning_rate)

    def _forward_learn(self, data):
        x, y = data
        loss = torch.nn.functional.cross_entropy(self._model(x), y)
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        return {"total_loss": loss.item()}

    def _forward_eval(self, data):
        return self._model(data)


class Accuracy(IMetric):
    """Counts per batch, so that the reduced accuracy is exact whatever the batch sizes."""

    def eval(self, inputs, label):
        return int((inputs.argmax(dim=-1) == label).sum()), len(label)

    def reduce_mean(self, inputs):
        correct, total = map(sum, zip(*inputs))
        return {"accuracy": correct / total}

    def gt(self, metric1, metric2):
        if metric2 is None:
            return True
        threshold = metric2["accuracy"] if isinstance(metric2, dict) else metric2
        return metric1["accuracy"] >= threshold


class ScalarAccuracy(Accuracy):
    """The same accuracy, reduced to a bare number."""

    def reduce_mean(self, inputs):
        return super().reduce_mean(inputs)["accuracy"]

    def gt(self, metric1, metric2):
        return metric2 is None or metric1 >= metric2


class EvalOnly:
    """Not a metric: it scores batches but cannot reduce or compare them."""

    def eval(self, inputs, label):
        return 0


def blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(0.0, 3.0, size=(N_CLASSES, OBS_DIM))
    y = rng.integers(0, N_CLASSES, size=N_DATA)
    x = centers[y] + rng.normal(0.0, 1.0, size=(N_DATA, OBS_DIM))
    return x.astype(np.float32), y.astype(np.int64)


def hand_accuracy(model: torch.nn.Linear, x: np.ndarray, y: np.ndarray) -> float:
    weight, bias = model.weight.detach().numpy(), model.bias.detach().numpy()
    return float(np.mean(np.argmax(x @ weight.T + bias, axis=1) == y))


def make_policy(seed: int = 0) -> ClassifierPolicy:
    torch.manual_seed(seed)
    return ClassifierPolicy({}, model=torch.nn.Linear(OBS_DIM, N_CLASSES), enable_field=["learn", "eval"])


def eval_loader(x: np.ndarray, y: np.ndarray) -> DataLoader:
    return DataLoader(TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=EVAL_BATCH)


def test_training_reaches_stop_value_and_metric_is_accuracy(tmp_path):
    x, y = blobs()
    policy = make_policy()
    train = DataLoader(
        TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
        batch_size=32,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
    )
    writer = SummaryWriter(str(tmp_path / "tb"))
    evaluator = MetricSerialEvaluator(
        dict(eval_freq=20, stop_value=0.95), env=(eval_loader(x, y), Accuracy()),
        policy=policy.eval_mode, tb_logger=writer,
    )  # fmt: skip
    saved, history = [], []
    train_iter, stop = 0, False
    while not stop and train_iter <= 400:  # a serial pipeline: evaluate when due, else one SGD step
        for batch in train:
            if evaluator.should_eval(train_iter):
                stop, metric = evaluator.eval(saved.append, train_iter=train_iter)
                assert metric["accuracy"] == pytest.approx(
                    hand_accuracy(policy.eval_mode.get_attribute("model"), x, y), abs=1e-12
                )
                history.append((train_iter, metric["accuracy"], stop))
                if stop:
                    break
            policy.learn_mode.forward(batch)
            train_iter += 1
    evaluator.close()

    iters = [it for it, _, _ in history]
    assert iters == list(range(0, iters[-1] + 1, 20)), "iteration 0, then every eval_freq iterations"
    accuracies = [acc for _, acc, _ in history]
    assert accuracies[0] < 0.9, "an untrained classifier should be far from the stop value"
    # stop_flag flips at the first evaluation that reaches stop_value, and not before
    assert stop and history[-1][1] >= 0.95
    assert all(not flag and acc < 0.95 for _, acc, flag in history[:-1])
    # ckpt_best is saved whenever the accuracy is at least the best so far (gt is >=)
    expected_saves = sum(acc >= max(accuracies[: i + 1]) for i, acc in enumerate(accuracies))
    assert saved == ["ckpt_best.pth.tar"] * expected_saves
    assert evaluator.best_metric == {"accuracy": max(accuracies)}

    events = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    logged = events.Scalars("evaluator/accuracy")
    assert [e.step for e in logged] == iters, "without env steps, evaluations are logged by iteration"
    assert [e.value for e in logged] == pytest.approx(accuracies)
    assert len(events.Scalars("evaluator/evaluate_time_s")) == len(iters)


def test_list_of_numpy_batches_matches_the_dataloader(tmp_path):
    x, y = blobs(seed=1)
    policy = make_policy(seed=1)
    batches = [(x[i : i + EVAL_BATCH], y[i : i + EVAL_BATCH]) for i in range(0, N_DATA, EVAL_BATCH)]
    writer = SummaryWriter(str(tmp_path / "tb"))
    from_list = MetricSerialEvaluator(
        {}, env=(batches, ScalarAccuracy()), policy=policy.eval_mode, tb_logger=writer
    )
    from_loader = MetricSerialEvaluator(
        {}, env=(eval_loader(x, y), ScalarAccuracy()), policy=policy.eval_mode
    )
    _, metric = from_list.eval(train_iter=3, envstep=120)
    assert metric == pytest.approx(hand_accuracy(policy.eval_mode.get_attribute("model"), x, y), abs=1e-12)
    assert from_loader.eval()[1] == metric
    # the same list is evaluated again on the next call
    assert from_list.eval(train_iter=4, envstep=150)[1] == metric
    from_list.close()
    events = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    logged = events.Scalars("evaluator/metric")
    assert [(e.step, e.value) for e in logged] == [(120, pytest.approx(metric)), (150, pytest.approx(metric))]


def test_stop_value_semantics():
    x, y = blobs()
    policy = make_policy()
    env = (eval_loader(x, y), Accuracy())
    accuracy = hand_accuracy(policy.eval_mode.get_attribute("model"), x, y)
    below = MetricSerialEvaluator(dict(stop_value=accuracy - 0.01), env=env, policy=policy.eval_mode)
    assert below.eval(train_iter=0) == (False, {"accuracy": accuracy}), "no stop before training began"
    assert below.eval(train_iter=1)[0] is True
    exactly = MetricSerialEvaluator(dict(stop_value={"accuracy": accuracy}), env=env, policy=policy.eval_mode)
    assert exactly.eval(train_iter=1)[0] is True, "gt is >=, and stop_value may be a dict"
    above = MetricSerialEvaluator(dict(stop_value=accuracy + 0.01), env=env, policy=policy.eval_mode)
    assert above.eval(train_iter=1)[0] is False
    never = MetricSerialEvaluator({}, env=env, policy=policy.eval_mode)
    assert never.eval(train_iter=1)[0] is False, "stop_value=None never stops (gt(x, None) is True)"


def test_reset_and_registry():
    x, y = blobs()
    policy, other = make_policy(seed=0), make_policy(seed=5)
    evaluator = create_serial_evaluator(
        dict(type="metric", eval_freq=10), env=(eval_loader(x, y), Accuracy())
    )
    assert isinstance(evaluator, MetricSerialEvaluator)
    evaluator.reset(policy.eval_mode)
    first = evaluator.eval(train_iter=0)[1]
    assert evaluator.should_eval(10) and not evaluator.should_eval(15)
    evaluator.reset_policy(other.eval_mode)
    assert evaluator.policy is not None and evaluator.env[1].__class__ is Accuracy
    assert (
        evaluator.eval()[1]
        == {"accuracy": hand_accuracy(other.eval_mode.get_attribute("model"), x, y)}
        != first
    )
    evaluator.reset()
    assert evaluator.best_metric is None and evaluator.should_eval(0)
    assert MetricSerialEvaluator.default_config().eval_freq == 50


def test_bad_inputs_give_clear_errors():
    x, y = blobs()
    policy = make_policy()
    loader = eval_loader(x, y)
    with pytest.raises(ConfigError, match="eval_freq"):
        MetricSerialEvaluator(dict(eval_frq=10))
    with pytest.raises(ConfigError, match=r"pair \(dataloader, metric\)"):
        MetricSerialEvaluator({}, env=loader)
    with pytest.raises(ConfigError, match="iterable of"):
        MetricSerialEvaluator({}, env=(42, Accuracy()))
    with pytest.raises(ConfigError, match="EvalOnly lacks reduce_mean, gt"):
        MetricSerialEvaluator({}, env=(loader, EvalOnly()))
    with pytest.raises(ConfigError, match="has no policy"):
        MetricSerialEvaluator({}, env=(loader, Accuracy())).eval()
    with pytest.raises(ConfigError, match="has no \\(dataloader, metric\\) pair"):
        MetricSerialEvaluator({}, policy=policy.eval_mode).eval()
    dict_batches = [{"obs": x[:10], "label": y[:10]}]
    with pytest.raises(ShapeError, match="Batch 0 .* is a dict; each batch must be a pair"):
        MetricSerialEvaluator({}, env=(dict_batches, Accuracy()), policy=policy.eval_mode).eval()
    with pytest.raises(ShapeError, match="Batch 1 .* is a tuple of length 3"):
        triples = [(x[:5], y[:5]), (x[:5], y[:5], y[:5])]
        MetricSerialEvaluator({}, env=(triples, Accuracy()), policy=policy.eval_mode).eval()
    once = MetricSerialEvaluator({}, env=(iter([(x, y)]), Accuracy()), policy=policy.eval_mode)
    once.eval()
    with pytest.raises(ConfigError, match="yielded no batches.*generator"):
        once.eval()
