"""The recurrent cells of ``get_lstm`` and their hidden-state formats, on real tensors."""

from __future__ import annotations

import pytest
import torch

from ding_ray.torch_utils import GRU, LSTM, PytorchLSTM, get_lstm

SEQ, BATCH, IN, HIDDEN = 5, 3, 4, 6


def test_the_normal_lstm_without_norm_is_torchs_lstm_with_its_gates_reordered():
    torch.manual_seed(0)
    ours = get_lstm("normal", IN, HIDDEN, num_layers=2, norm_type=None)
    reference = torch.nn.LSTM(IN, HIDDEN, num_layers=2)
    with torch.no_grad():
        for layer in range(2):
            # DI-engine's gate order is input, forget, output, cell; torch's input, forget, cell, output
            i, f, o, u = range(4)
            order = torch.cat([torch.arange(g * HIDDEN, (g + 1) * HIDDEN) for g in (i, f, u, o)])
            getattr(reference, f"weight_ih_l{layer}").copy_(ours.wx[layer].T[order])
            getattr(reference, f"weight_hh_l{layer}").copy_(ours.wh[layer].T[order])
            getattr(reference, f"bias_ih_l{layer}").copy_(ours.bias[layer][order])
            getattr(reference, f"bias_hh_l{layer}").zero_()
    x = torch.randn(SEQ, BATCH, IN)
    h0, c0 = torch.randn(2, BATCH, HIDDEN), torch.randn(2, BATCH, HIDDEN)
    output, state = ours(x, {"h": h0, "c": c0}, list_next_state=False)
    expected, (h, c) = reference(x, (h0, c0))
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(state["h"], h)
    torch.testing.assert_close(state["c"], c)


@pytest.mark.parametrize("lstm_type", ["normal", "pytorch"])
def test_per_sample_states_round_trip_through_the_batched_form(lstm_type):
    torch.manual_seed(0)
    cell = get_lstm(lstm_type, IN, HIDDEN, num_layers=2)
    x = torch.randn(SEQ, BATCH, IN)
    out_zero, per_sample = cell(x, None)
    assert len(per_sample) == BATCH and per_sample[0]["h"].shape == (2, 1, HIDDEN)
    zeros = torch.zeros(2, BATCH, HIDDEN)
    out_batched, batched = cell(x, {"h": zeros, "c": zeros}, list_next_state=False)
    torch.testing.assert_close(out_zero, out_batched)
    # the per-sample list fed back (dicts, pairs and None mixed) equals the batched state fed back
    mixed = [per_sample[0], (per_sample[1]["h"], per_sample[1]["c"]), None]
    batched_mixed = {
        k: torch.cat([per_sample[0][k], per_sample[1][k], torch.zeros(2, 1, HIDDEN)], 1) for k in "hc"
    }
    out_list, _ = cell(x, mixed)
    out_dict, _ = cell(x, batched_mixed, list_next_state=False)
    torch.testing.assert_close(out_list, out_dict)


def test_gru_steps_once_and_mirrors_h_into_c():
    cell = get_lstm("gru", IN, HIDDEN)
    assert isinstance(cell, GRU)
    output, state = cell(torch.randn(1, BATCH, IN), None, list_next_state=False)
    assert output.shape == (1, BATCH, HIDDEN) and torch.equal(state["h"], state["c"])
    with pytest.raises(ValueError, match="call it once per time step"):
        cell(torch.randn(2, BATCH, IN), None)


def test_the_types_and_bad_input():
    assert isinstance(get_lstm("normal", IN, HIDDEN), LSTM)
    assert isinstance(get_lstm("pytorch", IN, HIDDEN), PytorchLSTM)
    with pytest.raises(ValueError, match="lstm_type='hpc' is not supported .*use 'normal'"):
        get_lstm("hpc", IN, HIDDEN)
    with pytest.raises(ValueError, match="norm_type='BN' is not supported by the LSTM; choose one of"):
        get_lstm("normal", IN, HIDDEN, norm_type="BN")
    with pytest.raises(ValueError, match="one layer"):
        get_lstm("gru", IN, HIDDEN, num_layers=2)
    cell = get_lstm("normal", IN, HIDDEN)
    with pytest.raises(RuntimeError, match="prev_state has 2 entries for a batch of 3"):
        cell(torch.randn(SEQ, BATCH, IN), [None, None])
    with pytest.raises(TypeError, match="pass None, a dict"):
        cell(torch.randn(SEQ, BATCH, IN), torch.zeros(1))
