"""DI-engine's ``ding.torch_utils`` names that user code calls most: nested data conversions, the
optimizers with gradient clipping, and the recurrent cells of its recurrent models."""

from ding_ray.torch_utils.data_helper import (
    same_shape,
    tensor_to_list,
    to_device,
    to_dtype,
    to_item,
    to_list,
    to_ndarray,
    to_tensor,
)
from ding_ray.torch_utils.grad_clip import GRAD_CLIP_TYPES, GRAD_IGNORE_TYPES, clip_grads, ignore_grads
from ding_ray.torch_utils.loss import LabelSmoothCELoss
from ding_ray.torch_utils.optimizer_helper import Adam, RMSprop
from ding_ray.torch_utils.rnn import GRU, LSTM, PytorchLSTM, get_lstm

__all__ = [
    "GRAD_CLIP_TYPES",
    "GRAD_IGNORE_TYPES",
    "GRU",
    "LSTM",
    "LabelSmoothCELoss",
    "Adam",
    "PytorchLSTM",
    "RMSprop",
    "clip_grads",
    "get_lstm",
    "ignore_grads",
    "same_shape",
    "tensor_to_list",
    "to_device",
    "to_dtype",
    "to_item",
    "to_list",
    "to_ndarray",
    "to_tensor",
]
