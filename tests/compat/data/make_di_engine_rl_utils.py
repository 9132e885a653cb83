"""Record what DI-engine 0.5.3's ``ding.rl_utils`` computes on seeded inputs, for ding_ray's compat test.

Run with a Python that has DI-engine 0.5.3 installed (not ding_ray's environment)::

    python tests/compat/data/make_di_engine_rl_utils.py     # writes di_engine_rl_utils.json

For each case of ``cases()`` (a function, its inputs drawn from a seeded generator, its other
arguments) it writes the inputs and DI-engine's outputs, as ``encode`` writes them, and for the
losses the gradient with respect to the input named ``grad``; under ``signatures``, the parameters
and defaults of each function and the fields of each named tuple. ding_ray's test imports ``call``,
``encode``, ``decode`` and ``signature`` from here, reads the inputs back from the json and calls ding_ray's
function of the same name the same way.
"""

from __future__ import annotations

import inspect
import json
import os

import torch
import torch.nn as nn

B, A, NSTEP = 6, 4, 3


def _cases(g: torch.Generator) -> dict[str, dict]:
    def randn(*shape):
        return torch.randn(*shape, generator=g)

    def rand(*shape):
        return torch.rand(*shape, generator=g)

    def randint(high, *shape):
        return torch.randint(0, high, shape, generator=g)

    def flags(*shape):
        return (rand(*shape) < 0.3).float()

    def q_data(nstep_shape=(NSTEP, B), weight=True, agents=None):
        lead = (B,) if agents is None else (B, agents)
        return dict(
            q=randn(*lead, A),
            next_n_q=randn(*lead, A),
            action=randint(A, *lead),
            next_n_action=randint(A, *lead),
            reward=randn(*nstep_shape),
            done=flags(*lead),
            weight=rand(B) if weight else None,
        )

    def dist(*shape):
        return torch.softmax(randn(*shape), dim=-1)

    def dist_data(tuple_name, reward_shape, agents=None, weight=None):
        lead = (B,) if agents is None else (B, agents)
        next_names = (
            ("next_dist", "next_act") if tuple_name == "dist_1step_td_data" else ("next_n_dist", "next_n_act")
        )
        return {
            "dist": dist(*lead, A, 11),
            next_names[0]: dist(*lead, A, 11),
            "act": randint(A, *lead),
            next_names[1]: randint(A, *lead),
            "reward": randn(*reward_shape) * 2,
            "done": flags(B),
            "weight": weight,
        }

    def trajectory(length):
        return [
            dict(obs=randn(3), action=randint(A), reward=randn(1), done=torch.tensor(i == length - 1))
            for i in range(length)
        ]

    def quantile_data(q_shape, next_shape, **extra):
        return dict(
            q=randn(*q_shape), next_n_q=randn(*next_shape), action=randint(A, B), next_n_action=randint(A, B),
            reward=randn(NSTEP, B), done=flags(B), **extra,
        )  # fmt: skip

    def case(fn, tuple_name=None, fields=None, grad=None, /, **kwargs):
        built = dict(fn=fn, kwargs=kwargs, **({} if grad is None else dict(grad=grad)))
        return built if tuple_name is None else dict(built, data=tuple_name, fields=fields)

    def ppo_continuous():
        def mu_sigma():
            return dict(mu=randn(B, 2), sigma=rand(B, 2) + 0.3)

        return dict(
            mu_sigma_new=mu_sigma(), mu_sigma_old=mu_sigma(), action=randn(B, 2), value_new=randn(B),
            value_old=randn(B), adv=randn(B) * 2, return_=randn(B), weight=rand(B),
        )  # fmt: skip

    def ppo_discrete():
        return dict(
            logit_new=randn(B, A), logit_old=randn(B, A), action=randint(A, B), value_new=randn(B),
            value_old=randn(B), adv=randn(B) * 2, return_=randn(B), weight=None,
        )  # fmt: skip

    def returns():
        return dict(reward=randn(NSTEP, B), next_value=randn(B), done=flags(B))

    q_1step = dict(
        q=randn(B, A), next_q=randn(B, A), act=randint(A, B), next_act=randint(A, B), reward=randn(B),
        done=flags(B), weight=rand(B),
    )  # fmt: skip
    quantiles, tau, tau_prime = 8, 6, 5
    fractions = torch.arange(0.5 / quantiles, 1, 1 / quantiles).view(1, -1, 1).repeat(B, 1, 1)
    c51 = dict(gamma=0.95, v_min=-5.0, v_max=5.0, n_atom=11)
    q_n, dist_1, dist_n = "q_nstep_td_data", "dist_1step_td_data", "dist_nstep_td_data"
    upgo_inputs = dict(rhos=rand(5, B), rewards=randn(5, B), bootstrap_values=randn(6, B))
    return {
        "q_1step_td_error": case("q_1step_td_error", "q_1step_td_data", q_1step, "q", gamma=0.95),
        "q_nstep_td_error": case("q_nstep_td_error", q_n, q_data(weight=False), "q", gamma=0.97, nstep=NSTEP),
        "q_nstep_td_error_weight_value_gamma": case(
            "q_nstep_td_error", q_n, q_data(), "q", gamma=0.97, nstep=NSTEP, value_gamma=rand(B)
        ),
        "q_nstep_td_error_cum_reward": case(
            "q_nstep_td_error", q_n, q_data(nstep_shape=(B,)), "q", gamma=0.9, nstep=NSTEP, cum_reward=True
        ),
        "q_nstep_td_error_smooth_l1": case(
            "q_nstep_td_error", q_n, q_data(), "q", gamma=0.99, nstep=NSTEP, criterion="smooth_l1"
        ),
        "q_nstep_td_error_agents": case(
            "q_nstep_td_error", q_n, q_data((NSTEP, B, 2), False, agents=2), "q", gamma=0.97, nstep=NSTEP
        ),
        "q_nstep_td_error_with_rescale": case(
            "q_nstep_td_error_with_rescale", q_n, q_data(), "q", gamma=0.997, nstep=NSTEP, value_gamma=rand(B)
        ),
        "nstep_return": case("nstep_return", "nstep_return_data", returns(), gamma=0.9, nstep=NSTEP),
        "nstep_return_value_gamma": case(
            "nstep_return", "nstep_return_data", returns(), gamma=0.9, nstep=NSTEP, value_gamma=rand(B)
        ),
        "nstep_return_scalar_value_gamma": case(
            "nstep_return", "nstep_return_data", returns(), gamma=0.9, nstep=NSTEP, value_gamma=0.5
        ),
        "nstep_return_gamma_per_sample": case(
            "nstep_return", "nstep_return_data", returns(), gamma_per_sample=rand(B), nstep=NSTEP
        ),
        "value_transform": case("value_transform", x=randn(20) * 30),
        "value_transform_eps": case("value_transform", x=randn(20) * 30, eps=0.1),
        "value_inv_transform": case("value_inv_transform", x=randn(20) * 3),
        "value_inv_transform_eps": case("value_inv_transform", x=randn(20) * 3, eps=0.1),
        "td_lambda_error": case(
            "td_lambda_error",
            "td_lambda_data",
            dict(value=randn(6, B), reward=randn(5, B), weight=None),
            "value",
        ),
        "td_lambda_error_weight": case(
            "td_lambda_error",
            "td_lambda_data",
            dict(value=randn(6, B), reward=randn(5, B), weight=rand(5, B)),
            "value",
            gamma=0.95,
            lambda_=0.7,
        ),
        "generalized_lambda_returns_done": case(
            "generalized_lambda_returns",
            bootstrap_values=randn(6, B),
            rewards=randn(5, B),
            gammas=0.9,
            lambda_=0.8,
            done=flags(5, B),
        ),  # fmt: skip
        "dist_1step_td_error": case("dist_1step_td_error", dist_1, dist_data(dist_1, (B,)), "dist", **c51),
        "dist_1step_td_error_agents": case(
            "dist_1step_td_error", dist_1, dist_data(dist_1, (B,), agents=3), "dist", **c51
        ),
        "dist_nstep_td_error": case(
            "dist_nstep_td_error", dist_n, dist_data(dist_n, (NSTEP, B)), "dist", **c51, nstep=NSTEP
        ),
        "dist_nstep_td_error_weight_value_gamma": case(
            "dist_nstep_td_error",
            dist_n,
            dist_data(dist_n, (NSTEP, B), weight=rand(B)),
            "dist",
            **c51,
            nstep=NSTEP,
            value_gamma=rand(B),
        ),
        "qrdqn_nstep_td_error": case(
            "qrdqn_nstep_td_error",
            "qrdqn_nstep_td_data",
            quantile_data((B, A, quantiles), (B, A, quantiles), tau=fractions, weight=rand(B)),
            "q",
            gamma=0.97,
            nstep=NSTEP,
        ),
        "qrdqn_nstep_td_error_value_gamma": case(
            "qrdqn_nstep_td_error",
            "qrdqn_nstep_td_data",
            quantile_data((B, A, quantiles), (B, A, quantiles), tau=fractions, weight=None),
            "q",
            gamma=0.97,
            nstep=NSTEP,
            value_gamma=rand(B),
        ),
        "iqn_nstep_td_error": case(
            "iqn_nstep_td_error",
            "iqn_nstep_td_data",
            quantile_data((tau, B, A), (tau_prime, B, A), replay_quantiles=rand(tau * B, 1), weight=rand(B)),
            "q",
            gamma=0.97,
            nstep=NSTEP,
        ),
        "iqn_nstep_td_error_kappa_value_gamma": case(
            "iqn_nstep_td_error",
            "iqn_nstep_td_data",
            quantile_data((tau, B, A), (tau_prime, B, A), replay_quantiles=rand(tau, B, 1), weight=None),
            "q",
            gamma=0.97,
            nstep=NSTEP,
            kappa=2.0,
            value_gamma=rand(B),
        ),
        "a2c_error": case(
            "a2c_error",
            "a2c_data",
            dict(
                logit=randn(B, A),
                action=randint(A, B),
                value=randn(B),
                adv=randn(B),
                return_=randn(B),
                weight=rand(B),
            ),
            "logit",
        ),  # fmt: skip
        "a2c_error_continuous": case(
            "a2c_error_continuous",
            "a2c_data",
            dict(
                logit=dict(mu=randn(B, 2), sigma=rand(B, 2) + 0.5),
                action=randn(B, 2),
                value=randn(B),
                adv=randn(B),
                return_=randn(B),
                weight=None,
            ),
            "action",
        ),  # fmt: skip
        "upgo_returns": case("upgo_returns", rewards=randn(5, B), bootstrap_values=randn(6, B)),
        "upgo_loss": case(
            "upgo_loss",
            None,
            None,
            "target_output",
            target_output=randn(5, B, A),
            action=randint(A, 5, B),
            **upgo_inputs,
        ),
        "upgo_loss_sub_actions_mask": case(
            "upgo_loss",
            None,
            None,
            "target_output",
            target_output=randn(5, B, 3, A),
            action=randint(A, 5, B, 3),
            mask=flags(5, B, 3),
            **upgo_inputs,
        ),  # fmt: skip
        "get_train_sample_last": case("get_train_sample", data=trajectory(7), unroll_len=3),
        "get_train_sample_drop": case(
            "get_train_sample", data=trajectory(7), unroll_len=3, last_fn_type="drop"
        ),
        "get_train_sample_null_padding": case(
            "get_train_sample", data=trajectory(7), unroll_len=3, last_fn_type="null_padding"
        ),
        "get_train_sample_short": case("get_train_sample", data=trajectory(2), unroll_len=4),
        "get_train_sample_one": case("get_train_sample", data=trajectory(3), unroll_len=1),
        # PPO with dual_clip: the continuous forms bound every sample, the discrete ones where adv < 0
        "ppo_error_continuous_dual_clip": case(
            "ppo_error_continuous", "ppo_data_continuous", ppo_continuous(), dual_clip=5.0
        ),
        "ppo_policy_error_continuous_dual_clip": case(
            "ppo_policy_error_continuous",
            "ppo_policy_data_continuous",
            {k: v for k, v in ppo_continuous().items() if k not in ("value_new", "value_old", "return_")},
            dual_clip=5.0,
        ),
        "ppo_error_dual_clip": case("ppo_error", "ppo_data", ppo_discrete(), dual_clip=3.0),
    }


def cases() -> dict[str, dict]:
    """Every case with its inputs drawn from ``torch.Generator`` seeded 0."""
    return _cases(torch.Generator().manual_seed(0))


def call(lookup, case: dict):
    """Run ``case`` with the functions and named tuples ``lookup(name)`` returns; its outputs and,
    for a case with ``grad``, the gradient of the (first) output with respect to that input."""
    kwargs = dict(case["kwargs"])
    if kwargs.get("criterion") == "smooth_l1":
        kwargs["criterion"] = nn.SmoothL1Loss(reduction="none")
    if "gamma_per_sample" in kwargs:
        kwargs["gamma"] = list(kwargs.pop("gamma_per_sample"))
    inputs = case.get("fields", kwargs)
    leaf = None
    if "grad" in case:
        leaf = inputs[case["grad"]].clone().requires_grad_(True)
        inputs = {**inputs, case["grad"]: leaf}
    if "data" in case:
        output = lookup(case["fn"])(lookup(case["data"])(**inputs), **kwargs)
    else:
        output = lookup(case["fn"])(**inputs)
    result = {"output": tuple(output) if isinstance(output, tuple) else output}
    if leaf is not None:
        loss = output[0] if isinstance(output, tuple) else output
        loss.backward()
        result["grad"] = leaf.grad
    return result


def encode(value):
    """Tensors, dicts, lists, tuples and numbers as json values (a tensor: dtype, shape, values;
    float32 values with the 9 significant digits that give back the same float32)."""
    if isinstance(value, torch.Tensor):
        values = value.detach().flatten().tolist()
        if value.dtype == torch.float32:
            values = [float(f"{v:.9g}") for v in values]
        return {"dtype": str(value.dtype), "shape": list(value.shape), "values": values}
    if isinstance(value, dict):
        return {"dict": {k: encode(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"list": [encode(v) for v in value]}
    return value


def decode(value):
    """The inverse of ``encode``."""
    if isinstance(value, dict):
        if "dtype" in value:
            dtype = getattr(torch, value["dtype"].removeprefix("torch."))
            return torch.tensor(value["values"], dtype=dtype).reshape(value["shape"])
        if "dict" in value:
            return {k: decode(v) for k, v in value["dict"].items()}
        return [decode(v) for v in value["list"]]
    return value


def _default(value):
    if value is inspect.Parameter.empty:
        return "<required>"
    if isinstance(value, nn.Module):
        return f"{type(value).__name__}(reduction={getattr(value, 'reduction', None)!r})"
    if callable(value):
        return value.__name__
    return value


def signature(thing) -> list:
    """A function's parameters as ``[name, default]`` pairs, or a named tuple's fields."""
    if hasattr(thing, "_fields"):
        return list(thing._fields)
    return [[name, _default(p.default)] for name, p in inspect.signature(thing).parameters.items()]


def main() -> None:
    import ding.rl_utils as rl_utils
    import ding.rl_utils.upgo as upgo

    def lookup(name):
        return getattr(rl_utils, name, None) or getattr(upgo, name)

    out = {}
    for name, case in cases().items():
        stored = {k: v for k, v in case.items() if k not in ("fields", "kwargs")}
        stored["fields"] = encode(case.get("fields"))
        stored["kwargs"] = encode(case["kwargs"])
        stored["result"] = encode(call(lookup, case))
        out[name] = stored
    names = sorted({case[key] for case in cases().values() for key in ("fn", "data") if key in case})
    out["signatures"] = {name: signature(lookup(name)) for name in names}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "di_engine_rl_utils.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"wrote {len(out)} cases to {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
