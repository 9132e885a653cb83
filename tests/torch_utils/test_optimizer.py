"""DI-engine's Adam and RMSprop: the gradient clip and ignore rules act in ``step`` on real gradients."""

from __future__ import annotations

import pytest
import torch

from ding_ray.torch_utils import Adam, RMSprop


def _params_with_grad(grad: list[float]) -> list[torch.nn.Parameter]:
    param = torch.nn.Parameter(torch.zeros(len(grad)))
    param.grad = torch.tensor(grad)
    return [param]


@pytest.mark.parametrize("optimizer_cls", [Adam, RMSprop])
def test_clip_value_and_clip_norm_bound_the_gradients_the_step_uses(optimizer_cls):
    params = _params_with_grad([3.0, -4.0])
    optimizer_cls(params, grad_clip_type="clip_value", clip_value=0.5).step()
    assert params[0].grad.tolist() == [0.5, -0.5]
    params = _params_with_grad([3.0, -4.0])
    optimizer_cls(params, grad_clip_type="clip_norm", clip_value=1.0).step()
    assert torch.linalg.vector_norm(params[0].grad).item() == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("ignore_type,bound", [("ignore_value", 2.0), ("ignore_norm", 4.0)])
def test_an_ignored_step_leaves_the_weights_as_they_were(ignore_type, bound):
    params = _params_with_grad([3.0, -4.0])
    Adam(params, lr=0.1, grad_ignore_type=ignore_type, ignore_value=bound).step()
    assert params[0].tolist() == [0.0, 0.0] and params[0].grad.tolist() == [0.0, 0.0]
    params = _params_with_grad([0.3, -0.4])
    Adam(params, lr=0.1, grad_ignore_type=ignore_type, ignore_value=bound).step()
    assert params[0].tolist() == pytest.approx([-0.1, 0.1])


def test_clip_momentum_bounds_each_element_by_its_running_second_moment():
    param = torch.nn.Parameter(torch.zeros(2))
    optimizer = Adam(
        [param], grad_clip_type="clip_momentum", clip_value=1.0, clip_coef=1.0, clip_momentum_timestep=2
    )
    for grad in ([1.0, 1.0], [1.0, 1.0], [10.0, 0.5]):
        param.grad = torch.tensor(grad)
        optimizer.step()
    # after 2 steps the bound is sqrt of the bias-corrected moment of (1, 1, 10) and (1, 1, 0.5)
    moment = optimizer.state[param]["thre_exp_avg_sq"]
    bound = (moment.sqrt() / (1 - 0.999**2) ** 0.5)[0].item()
    assert 1.0 < bound < 10.0 and param.grad.tolist() == pytest.approx([bound, 0.5], rel=1e-4)


def test_adamw_decays_the_weights_apart_from_the_gradient():
    param = torch.nn.Parameter(torch.ones(2))
    param.grad = torch.zeros(2)
    Adam([param], lr=0.1, optim_type="adamw", weight_decay=0.5).step()
    assert param.tolist() == pytest.approx([0.95, 0.95])


def test_get_grad_is_the_sum_of_squared_norms():
    params = _params_with_grad([3.0, -4.0])
    assert Adam(params).get_grad() == pytest.approx(25.0)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (
            dict(grad_clip_type="clip_sum", clip_value=1.0),
            "grad_clip_type='clip_sum' is not supported; choose one of",
        ),
        (dict(grad_clip_type="clip_norm"), "needs clip_value"),
        (dict(grad_ignore_type="ignore_norm"), "needs ignore_value"),
        (dict(grad_norm_type="l2"), "grad_norm_type='l2'"),
    ],
)
def test_bad_arguments_name_what_is_allowed(kwargs, message):
    for optimizer_cls in (Adam, RMSprop):
        with pytest.raises(ValueError, match=message):
            optimizer_cls([torch.nn.Parameter(torch.zeros(1))], **kwargs)
    with pytest.raises(
        ValueError, match="optim_type='sgd' is not supported; choose one of \\('adam', 'adamw'\\)"
    ):
        Adam([torch.nn.Parameter(torch.zeros(1))], optim_type="sgd")
