"""DRQN: a sequence forward equals stepping one observation at a time, with DI-engine's output keys."""

import pytest
import torch

from ding_ray.errors import ShapeError
from ding_ray.model import DRQN, create_model

T, B, OBS, ACTIONS = 4, 3, 5, 2


@pytest.mark.parametrize("lstm_type", ["normal", "pytorch", "gru"])
@pytest.mark.parametrize("res_link", [False, True])
def test_sequence_forward_equals_stepping(lstm_type, res_link) -> None:
    torch.manual_seed(0)
    model = DRQN(OBS, ACTIONS, [16, 8], lstm_type=lstm_type, res_link=res_link)
    obs = torch.randn(T, B, OBS)
    out = model({"obs": obs, "prev_state": None}, saved_state_timesteps=[2, 4])
    assert out["logit"].shape == (T, B, ACTIONS)
    assert out["hidden_state"].shape == (T, B, 8)
    assert len(out["next_state"]) == B and len(out["saved_state"]) == 2
    state = None
    for t in range(T):
        step = model({"obs": obs[t], "prev_state": state}, inference=True)
        torch.testing.assert_close(step["logit"], out["logit"][t])
        state = step["next_state"]
        if t + 1 == 2:
            torch.testing.assert_close(
                torch.cat([s["h"] for s in state], 1), torch.cat([s["h"] for s in out["saved_state"][0]], 1)
            )
    torch.testing.assert_close(torch.cat([s["h"] for s in state], 1), out["hidden_state"][-1:])


def test_created_by_di_engine_type_and_checks_shapes() -> None:
    model = create_model(dict(type="drqn", obs_shape=OBS, action_shape=ACTIONS, dueling=False))
    assert isinstance(model, DRQN)
    with pytest.raises(ShapeError, match=r"obs \[T, B, obs_dim\].*inference=True"):
        model({"obs": torch.randn(B, OBS), "prev_state": None})
