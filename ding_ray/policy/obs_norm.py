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

PREFIX = "obs_norm."  # state dict keys of the statistics, beside the model's own keys


class ObsNormalizer:
    """``normalize(obs) = clip((obs - mean) / sqrt(var + eps), -clip, clip)`` per feature.

    ``update`` merges a batch into the running moments (Chan et al.'s parallel formula). Before
    the first update the mean is 0 and the variance 1, so normalising changes nothing.
    """

    def __init__(self, shape: int | Sequence[int], clip: float = 10.0, epsilon: float = 1e-8) -> None:
        self.shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
        self.clip, self.epsilon = float(clip), float(epsilon)
        self.mean = np.zeros(self.shape, np.float64)
        self.var = np.ones(self.shape, np.float64)
        self.count = 0.0
        self._refresh()

    def _refresh(self) -> None:
        # float32 copies for the forward passes, rebuilt only when the statistics change
        self._mean_t = torch.as_tensor(self.mean, dtype=torch.float32)
        self._std_t = torch.as_tensor(np.sqrt(self.var + self.epsilon), dtype=torch.float32)

    def update(self, obs: np.ndarray | torch.Tensor) -> None:
        if isinstance(obs, torch.Tensor):
            obs = obs.detach().cpu().numpy()
        x = np.asarray(obs, dtype=np.float64).reshape(-1, *self.shape)
        n = len(x)
        if n == 0:
            return
        batch_mean, batch_var = x.mean(axis=0), x.var(axis=0)
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean = self.mean + delta * n / total
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.var = m2 / total
        self.count = total
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
        self.mean = np.array(state[PREFIX + "mean"], dtype=np.float64).reshape(self.shape)
        self.var = np.array(state[PREFIX + "var"], dtype=np.float64).reshape(self.shape)
        self.count = float(np.asarray(state[PREFIX + "count"]))
        self._refresh()


def split_state(model_state: Mapping[str, object]) -> tuple[dict, dict]:
    """``(model keys, obs_norm keys)`` of a ``state_dict()['model']`` that may carry both."""
    model, norm = {}, {}
    for key, value in model_state.items():
        (norm if key.startswith(PREFIX) else model)[key] = value
    return model, norm
