"""``serial_pipeline_bc``: behaviour cloning from a demonstration file, with a held-out tenth of it
for validation."""

from __future__ import annotations

import math
from functools import partial

import torch
from torch.utils.data import DataLoader, Subset
from torch.utils.data.dataloader import default_collate

from ding_ray.entry.serial_entry_offline import as_list, compile_offline_config, start_offline_run
from ding_ray.framework.middleware.offline_dataset import NaiveRLDataset
from ding_ray.policy import Policy
from ding_ray.utils.runtime import setup_logging


def serial_pipeline_bc(
    input_cfg: str | tuple[dict, dict],
    seed: int,
    data_path: str,
    model: torch.nn.Module | None = None,
    max_iter: int = int(1e6),
) -> tuple[Policy, bool]:
    """Clone the actions of the ``'naive'`` demonstration file at ``data_path`` (``collect_demo_data``'s).

    The last tenth of the file (rounded up) is held out: before each of ``policy.learn.train_epoch``
    passes over the rest (in file order, batches of ``learn.batch_size``), TensorBoard gets the
    held-out accuracy of the greedy action (``validation_acc``) or, with ``policy.continuous``, its
    L1 error (``validation_loss``). Before each training iteration the evaluator runs when
    ``eval_freq`` says so; the run stops at the stop value, after ``max_iter`` iterations or after
    the last epoch. Returns ``(policy, stop)``, DI-engine's result.
    """
    setup_logging()
    cfg = compile_offline_config(input_cfg, seed, None, data_path)
    run, dataset, epochs = start_offline_run(cfg, None, model, partial(NaiveRLDataset, data_path))
    held_out = math.ceil(len(dataset) / 10)
    batch_size = cfg.policy.learn.batch_size
    train_set = Subset(dataset, range(len(dataset) - held_out))
    validation_set = Subset(dataset, range(len(dataset) - held_out, len(dataset)))
    train_loader = DataLoader(train_set, batch_size, collate_fn=as_list)
    validation_loader = DataLoader(validation_set, batch_size, collate_fn=default_collate)
    continuous = bool(cfg.policy.get("continuous", False))
    iterations = 0
    with run:
        for _ in range(epochs):
            score = _validate(run.policy, validation_loader, continuous)
            label = "validation_loss" if continuous else "validation_acc"
            run.tb_logger.add_scalar(label, score, iterations)
            for batch in train_loader:
                if run.evaluator.should_eval(run.learner.train_iter):
                    run.evaluate()
                    if run.stop:
                        break
                run.learner.train(batch)
                iterations += 1
                if iterations >= max_iter:
                    run.stop = True
                    break
            if run.stop:
                break
    return run.policy, run.stop


def _validate(policy: Policy, loader: DataLoader, continuous: bool) -> float:
    """The mean over held-out batches of the greedy action's accuracy, or of the L1 error of the action."""
    scores = []
    for batch in loader:
        out = policy.eval_mode.forward(torch.as_tensor(batch["obs"], dtype=torch.float32))
        action = torch.as_tensor(batch["action"])
        if continuous:
            error = torch.nn.functional.l1_loss(out["action"], action.reshape(out["action"].shape))
            scores.append(error.item())
        else:
            scores.append((out["action"] == action.reshape(-1)).float().mean().item())
    return sum(scores) / len(scores)
