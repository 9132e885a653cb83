"""``ObsNormalizer``: observations scaled by a running mean and standard deviation per feature.

Continuous control needs it: Pendulum's angular velocity spans [-8, 8] while cos/sin stay in
[-1, 1]. The learner updates the statistics from the observations it trains on; the collect and
eval forwards only apply them. The statistics travel inside the policy's ``state_dict()['model']``
under ``obs_norm.*`` keys (tensors), so checkpoints keep them and a Ray collector that loads the
published weights normalises exactly as the learner does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from ding_ray.errors import ConfigError
from ding_ray.policy.running_stats import RunningMeanStd

PREFIX = "obs_norm."  # state dict keys of the statistics, beside the model's own keys


class ObsNormalizer(RunningMeanStd):
    """``normalize(obs) = clip((obs - mean) / sqrt(var + eps), -clip, clip)`` per feature.

    Before the first update the mean is 0 and the variance 1, so normalising changes nothing.
    """

    def __init__(self, shape: int | Sequence[int], clip: float = 10.0, epsilon: float = 1e-8) -> None:
        super().__init__(epsilon=0.0, shape=shape)
        self.clip, self.epsilon = float(clip), float(epsilon)
        self._refresh()

    def _refresh(self) -> None:
        # float32 copies for the forward passes, rebuilt only when the statistics change
        self._mean_t = torch.as_tensor(self.mean, dtype=torch.float32)
        self._std_t = torch.as_tensor(np.sqrt(self.var + self.epsilon), dtype=torch.float32)

    def update(self, obs: np.ndarray | torch.Tensor) -> None:
        super().update(obs)
        self._refresh()

    def normalize(self, obs: torch.Tensor) -> torch.Tensor:
        mean, std = self._mean_t.to(obs.device), self._std_t.to(obs.device)
        return ((obs - mean) / std).clamp(-self.clip, self.clip)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The statistics as float64 tensors under ``obs_norm.*`` keys (weights publish tensors)."""
        return {
            PREFIX + "mean": torch.as_tensor(self.mean.copy()),
            PREFIX + "var": torch.as_tensor(self.var.copy()),
            PREFIX + "count": torch.tensor(self.count, dtype=torch.float64),
        }

    def load_state_dict(self, state: Mapping[str, torch.Tensor | np.ndarray]) -> None:
        super().load_state_dict({key: np.asarray(state[PREFIX + key]) for key in ("mean", "var", "count")})
        self._refresh()


def split_state(model_state: Mapping[str, object]) -> tuple[dict, dict]:
    """``(model keys, obs_norm keys)`` of a ``state_dict()['model']`` that may carry both."""
    model, norm = {}, {}
    for key, value in model_state.items():
        (norm if key.startswith(PREFIX) else model)[key] = value
    return model, norm


def with_obs_norm(model_state: dict, norm: ObsNormalizer | None) -> dict:
    """A model's state dict, plus the observation statistics when there are any."""
    return model_state if norm is None else {**model_state, **norm.state_dict()}


def load_model_state(model: torch.nn.Module, state: Mapping[str, object], norm: ObsNormalizer | None) -> None:
    """Load what ``with_obs_norm`` saved: the model's keys into ``model``, the statistics into
    ``norm``; a checkpoint must carry statistics exactly when the policy normalises."""
    model_state, norm_state = split_state(state)
    if norm is not None:
        if not norm_state:
            raise ConfigError(
                "policy.obs_norm=True but the state dict has no obs_norm statistics (saved with "
                "obs_norm=False?): load a checkpoint trained with obs_norm=True, or set it False."
            )
        norm.load_state_dict(norm_state)
    elif norm_state:
        raise ConfigError(
            "The state dict carries obs_norm statistics but policy.obs_norm=False: set "
            "policy.obs_norm=True to use the weights as they were trained."
        )
    model.load_state_dict(model_state, strict=True)
