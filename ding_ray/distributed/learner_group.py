"""A data-parallel learner group: ``ray.num_learners`` learner actors train one policy together.

DI-engine's ``LearnerAggregator`` (and ``policy.multi_gpu``) in Ray terms. Every member gets the
same sampled batch (one object in the store), trains on its share of each minibatch, and the
gradients are averaged with ``torch.distributed`` (gloo on CPU, NCCL on GPU; one all-reduce per
optimizer step), so the weights stay identical after every step: N learners on minibatches of
``batch_size`` rows take the steps one learner would take on them (exactly, without gradient
clipping; with it, each member clips its own gradients before they are averaged). Member 0 (the actor named
``learner``) publishes the weights and reports; the others are ``learner-1`` ... ``learner-{N-1}``.

``create_actors`` makes one with ``create_learner_group`` when ``ray.num_learners > 1``; the
pipelines then hand every call to all members (``LearnerClient``).
"""

from __future__ import annotations

import copy
import datetime
import socket
from typing import Any

import numpy as np
import ray
import torch
import torch.distributed as dist
from easydict import EasyDict

from ding_ray.distributed.actors import LearnerActor
from ding_ray.distributed.config import learner_name
from ding_ray.distributed.errors import get
from ding_ray.distributed.metrics import RayMetrics
from ding_ray.distributed.ray_port import remote_class
from ding_ray.distributed.user_modules import UserCode


class GroupLearnerActor(LearnerActor):
    """A ``LearnerActor`` that is member ``rank`` of a group of ``world_size``."""

    def __init__(
        self,
        cfg: EasyDict,
        publish_freq: int,
        rank: int,
        world_size: int,
        code: UserCode | None = None,
    ) -> None:
        """``code``: the user's code to load first (``user_code``)."""
        self.rank, self.world_size = int(rank), int(world_size)
        if cfg.policy.get("on_policy", False):
            # the policy cuts each member's share into minibatches itself: of a share's size
            cfg = copy.deepcopy(cfg)
            cfg.policy.learn.batch_size = max(1, int(cfg.policy.learn.batch_size) // self.world_size)
        # member 0 publishes as train calls go; the weights are the same everywhere
        super().__init__(cfg, publish_freq if self.rank == 0 else 2**62, code)
        self._metrics = RayMetrics(learner_name(self.rank), cfg.exp_name, interval_s=1.0)

    def address(self) -> str:
        """Where the others meet this member (call it on member 0)."""
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        return f"tcp://{ray.util.get_node_ip_address()}:{port}"

    def join(self, address: str, timeout_s: float = 120.0) -> int:
        """Join the process group at ``address``, start from member 0's weights, and average
        every gradient the optimizers step on from now on."""
        backend = (
            "nccl" if torch.cuda.is_available() and self._policy.learn_mode.get_attribute("cuda") else "gloo"
        )
        dist.init_process_group(
            backend,
            init_method=address,
            rank=self.rank,
            world_size=self.world_size,
            timeout=datetime.timedelta(seconds=timeout_s),
        )
        for optimizer in _optimizers(self._policy):
            for group in optimizer.param_groups:
                for tensor in group["params"]:
                    dist.broadcast(tensor.data, src=0)
            optimizer.step = self._averaging(optimizer, optimizer.step)
        return self.rank

    def _averaging(self, optimizer: torch.optim.Optimizer, step: Any) -> Any:
        """``step`` preceded by one all-reduce of all the optimizer's gradients (flattened: one
        collective per step, not one per tensor). Gradient clipping in the policy acts on each
        member's own gradients first; DI-engine's optimizer clips the averaged ones."""
        world = self.world_size

        def averaged_step(*args: Any, **kwargs: Any) -> Any:
            grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
            if grads:
                flat = torch.cat([g.reshape(-1) for g in grads])
                dist.all_reduce(flat)
                flat.div_(world)
                offset = 0
                for g in grads:
                    g.copy_(flat[offset : offset + g.numel()].view_as(g))
                    offset += g.numel()
            return step(*args, **kwargs)

        return averaged_step

    def _shard(self, rows: np.ndarray) -> np.ndarray:
        """Every ``world_size``-th row from ``rank`` (rows past a multiple of the group are
        dropped: every member must take the same number of steps)."""
        usable = len(rows) - len(rows) % self.world_size
        return rows[:usable][self.rank :: self.world_size]

    def leave(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()


def _optimizers(policy: object) -> list[torch.optim.Optimizer]:
    """The policy's optimizers (of the model, of SAC's log alpha, ...)."""
    optimizers = [v for v in vars(policy).values() if isinstance(v, torch.optim.Optimizer)]
    if not optimizers:
        raise RuntimeError(
            f"{type(policy).__name__} holds no torch optimizer: nothing to train data-parallel."
        )
    return optimizers


def create_learner_group(
    cfg: EasyDict, publish_freq: int, size: int, options: dict, code: UserCode | None = None
) -> list:
    """The members, named ``learner``, ``learner-1``, ..., joined into one process group (this
    waits for them to start: the group needs member 0's address); each loads ``code`` first."""
    members = [
        remote_class(GroupLearnerActor)
        .options(name=learner_name(rank), **options)
        .remote(cfg, publish_freq, rank, size, code)
        for rank in range(size)
    ]
    try:
        address = get(members[0].address.remote(), timeout=cfg.ray.actor_start_timeout_s)
        get([m.join.remote(address) for m in members], timeout=cfg.ray.actor_start_timeout_s)
    except Exception:
        for m in members:
            ray.kill(m, no_restart=True)
        raise
    return members
