"""``her_data_enhancer``: the fetcher of a Hindsight Experience Replay pipeline, and ``HERLearner``,
the learner stage that runs it with ``trainer``.

Instead of sampling transitions, it samples whole episodes (an ``EpisodeReplayBuffer`` filled by
``data_pusher`` from ``ctx.episodes``) and trains on their relabelled copies made by a
``HerRewardModel``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from easydict import EasyDict

from ding_ray.data.buffer.pipeline import pipeline_buffer
from ding_ray.data.columnar import unstack_batch
from ding_ray.framework.context import OnlineRLContext
from ding_ray.framework.middleware.train import trainer

logger = logging.getLogger(__name__)


def her_data_enhancer(cfg: EasyDict, buffer_: Any, her_reward_model: Any) -> Callable:
    """Sample episodes from ``buffer_`` and write their HER-relabelled transitions as the batch.

    ``her_reward_model.episode_size`` episodes are sampled (``cfg.policy.learn.batch_size`` when
    it is None); ``train_data`` is the list of all relabelled transitions of all of them, that is
    ``episode_size * her_replay_k * sample_per_episode`` items when ``sample_per_episode`` is set.
    When the buffer holds too few episodes, ``train_data`` is None and a warning says so.

    Reads ctx: train_iter.
    Writes ctx: train_data.
    """
    size = her_reward_model.episode_size or int(cfg.policy.learn.batch_size)
    buffer_ = pipeline_buffer(buffer_)

    def _fetch_and_enhance(ctx: Any) -> None:
        episodes = buffer_.sample(size, ctx.train_iter)
        if episodes is None:
            logger.warning(
                "The episode buffer cannot serve %d episodes yet; this training iteration is skipped "
                "(collect more episodes per iteration to avoid it).",
                size,
            )
            ctx.train_data = None
            return
        train_data = []
        for episode in episodes:
            steps = unstack_batch(episode) if isinstance(episode, Mapping) else episode
            for relabelled in her_reward_model.estimate(steps):
                train_data.extend(relabelled)
        ctx.train_data = train_data

    return _fetch_and_enhance


class HERLearner:
    """DI-engine's learner stage of a HER pipeline: ``cfg.policy.learn.update_per_collect`` rounds of
    ``her_data_enhancer`` and ``trainer``, ending early when the buffer holds too few episodes.

    ``policy``: what ``trainer`` takes (a learn mode, a ``Policy``, a ``BaseLearner``).

    Reads ctx: train_iter, env_step.
    Writes ctx: train_data, train_output (the rounds' outputs, a list), train_iter.
    """

    def __init__(self, cfg: EasyDict, policy: Any, buffer_: Any, her_reward_model: Any) -> None:
        self.cfg = cfg
        self._fetcher = her_data_enhancer(cfg, buffer_, her_reward_model)
        self._trainer = trainer(cfg, policy)

    def __call__(self, ctx: OnlineRLContext) -> None:
        outputs = []
        for _ in range(int(self.cfg.policy.learn.update_per_collect)):
            self._fetcher(ctx)
            if ctx.train_data is None:
                break
            ctx.train_output = None
            self._trainer(ctx)
            if ctx.train_output is not None:  # a learner actor's call may finish in a later round
                outputs.append(ctx.train_output)
        ctx.train_output = outputs
