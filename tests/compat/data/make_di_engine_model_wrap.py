"""Record what DI-engine 0.5.3's ``model_wrap`` wrappers give on seeded inputs, for ding_ray's compat test.

Run with a Python that has DI-engine 0.5.3 installed (not ding_ray's environment)::

    python tests/compat/data/make_di_engine_model_wrap.py     # writes di_engine_model_wrap.json

Each case of ``CASES`` builds a small model of this file (``ToyModel``: logits, an optional action
mask, a Gaussian; ``StateModel``: a recurrent state per env), wraps it with ``model_wrap`` and calls
it several times after seeding numpy's and torch's global generators, as a policy would. ``run_case``
returns every output as lists; ding_ray's test imports ``CASES`` and ``run_case`` from here and
calls them with ding_ray's ``model_wrap``.
"""

from __future__ import annotations

import json
import os

import numpy as np
import torch
from torch import nn

B, A = 5, 4


class ToyModel(nn.Module):
    """``obs [B, 3]`` -> ``logit`` [B, A] (with ``action_mask`` if ``masked``), or the Gaussian
    ``{'mu', 'sigma'}`` [B, 2] when ``gaussian``; with ``act``, a tanh action [B, 2] too."""

    def __init__(self, masked: bool = False, gaussian: bool = False, act: bool = False) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(3, A)
        self.mu, self.masked, self.gaussian, self.act = nn.Linear(3, 2), masked, gaussian, act

    def forward(self, obs: torch.Tensor) -> dict:
        if self.gaussian:
            mu = self.mu(obs)
            out = {"logit": {"mu": mu, "sigma": torch.ones_like(mu) * 0.5}}
            if self.act:
                out["action"] = torch.tanh(mu)
            return out
        out = {"logit": self.fc(obs)}
        if self.masked:
            out["action_mask"] = (
                torch.arange(A).repeat(len(obs), 1) + torch.arange(len(obs))[:, None]
            ) % 3 != 0
            out["action_mask"] = out["action_mask"].float()
        return out


class StateModel(nn.Module):
    """A recurrent toy: the next state of each env is its previous state (zeros when None) + obs."""

    def forward(self, data: dict) -> dict:
        obs = data["obs"]
        prev = [torch.zeros(2) if s is None else s for s in data["prev_state"]]
        nxt = [p + o for p, o in zip(prev, obs)]
        return {"logit": torch.stack(nxt), "next_state": nxt}


def _obs() -> torch.Tensor:
    return torch.randn(B, 3, generator=torch.Generator().manual_seed(1))


def _plain(value):
    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "values": value.detach().double().flatten().tolist()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _seed() -> None:
    np.random.seed(0)
    torch.manual_seed(0)


def _calls(wrapped, n: int, **kwargs) -> list:
    obs = _obs()
    _seed()
    return [_plain(wrapped.forward(obs, **kwargs)) for _ in range(n)]


def _hidden_state(model_wrap) -> list:
    wrapped = model_wrap(StateModel(), "hidden_state", state_num=3, save_prev_state=True)
    obs = torch.arange(6.0).reshape(3, 2)
    out = [wrapped.forward({"obs": obs})]
    out.append(wrapped.forward({"obs": obs[:2]}, data_id=[0, 2]))
    wrapped.reset(data_id=[2])
    out.append(wrapped.forward({"obs": obs}))
    wrapped.reset(data_id=[1], state=[torch.tensor([10.0, 20.0])])
    out.append(wrapped.forward({"obs": obs[:1]}, data_id=[1]))
    return [_plain(o) for o in out]


def _target(model_wrap, update_type: str, update_kwargs: dict) -> list:
    torch.manual_seed(0)
    online, target = nn.Linear(3, 2), nn.Linear(3, 2)
    wrapped = model_wrap(target, "target", update_type=update_type, update_kwargs=update_kwargs)
    out = []
    for step in range(4):
        with torch.no_grad():
            online.weight.add_(1.0)
        wrapped.update(online.state_dict())
        out.append(_plain(dict(target.state_dict())))
        if step == 1:
            wrapped.reset(target_update_count=0)
    wrapped.update(online.state_dict(), direct=True)
    out.append(_plain(dict(target.state_dict())))
    return out


def _info(model_wrap) -> list:
    wrapped = model_wrap(model_wrap(StateModel(), "hidden_state", state_num=2), "argmax_sample")
    return [wrapped.info(name) for name in ("forward", "reset", "before_forward", "training", "nothing")]


def _noise(model_wrap, **kwargs) -> list:
    wrapped = model_wrap(ToyModel(gaussian=True, act=True), "action_noise", **kwargs)
    obs = _obs()
    _seed()
    return [_plain(wrapped.forward(obs)["action"]) for _ in range(3)]


CASES = {
    "argmax_sample": lambda w: _calls(w(ToyModel(), "argmax_sample"), 1),
    "argmax_sample_masked": lambda w: _calls(w(ToyModel(masked=True), "argmax_sample"), 1),
    "multinomial_sample": lambda w: _calls(w(ToyModel(), "multinomial_sample"), 3),
    "multinomial_sample_alpha_masked": lambda w: _calls(
        w(ToyModel(masked=True), "multinomial_sample"), 3, alpha=0.5
    ),
    "eps_greedy_sample": lambda w: _calls(w(ToyModel(), "eps_greedy_sample"), 8, eps=0.5),
    "eps_greedy_sample_masked": lambda w: _calls(w(ToyModel(masked=True), "eps_greedy_sample"), 8, eps=0.5),
    "eps_greedy_sample_per_env": lambda w: _calls(
        w(ToyModel(), "eps_greedy_sample"), 4, eps={i: 0.2 * i for i in range(B)}
    ),
    "eps_greedy_sample_per_env_masked": lambda w: _calls(
        w(ToyModel(masked=True), "eps_greedy_sample"), 4, eps={i: 0.2 * i for i in range(B)}
    ),
    "eps_greedy_multinomial_sample": lambda w: _calls(
        w(ToyModel(), "eps_greedy_multinomial_sample"), 8, eps=0.5, alpha=2.0
    ),
    "deterministic_sample": lambda w: _calls(w(ToyModel(gaussian=True), "deterministic_sample"), 1),
    "reparam_sample": lambda w: _calls(w(ToyModel(gaussian=True), "reparam_sample"), 3),
    "combination_argmax_sample": lambda w: [
        _plain(w(ToyModel(), "combination_argmax_sample").forward(3, _obs()))
    ],
    "combination_multinomial_sample": lambda w: (
        _seed(),
        [_plain(w(ToyModel(), "combination_multinomial_sample").forward(2, _obs())) for _ in range(3)],
    )[1],
    "action_noise_gauss": lambda w: _noise(
        w, noise_type="gauss", noise_kwargs={"mu": 0.1, "sigma": 0.3}, noise_range={"min": -0.5, "max": 0.5}
    ),
    "action_noise_ou_unclipped": lambda w: _noise(
        w, noise_type="ou", noise_kwargs={"sigma": 0.5}, action_range=None
    ),
    "hidden_state": _hidden_state,
    "target_assign": lambda w: _target(w, "assign", {"freq": 2}),
    "target_momentum": lambda w: _target(w, "momentum", {"theta": 0.3}),
    "info": _info,
}


def run_case(name: str, model_wrap) -> list:
    return CASES[name](model_wrap)


def main() -> None:
    from ding.model import model_wrap

    out = {name: run_case(name, model_wrap) for name in CASES}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "di_engine_model_wrap.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"wrote {len(out)} cases to {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
