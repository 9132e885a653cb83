"""``ConvEncoder``: image observations ``(C, H, W)`` -> a feature vector, with DI-engine's meaning of
``encoder_hidden_size_list``; ``make_encoder`` picks it or the ``FCEncoder`` from ``obs_shape``.

How DI-engine 0.5.3's ``ConvEncoder`` (and so this one) reads ``hidden_size_list`` with K conv
layers (``kernel_size``/``stride`` of length K, by default ``[8, 4, 3]``/``[4, 2, 1]``, no padding):

- entries ``0 .. K-1`` are the output channels of the K conv layers, each followed by the activation;
- the last entry is the width of the linear layer that reads the flattened conv output. That layer
  has **no activation** after it: the head's first layer brings the next nonlinearity;
- so a list of K entries uses its last entry twice (last conv's channels and linear width): dizoo's
  pong ``[128, 128, 512]`` is conv 128 8x8/4, conv 128 4x4/2, conv 512 3x3/1, linear 512;
- a list of K + 1 entries is K conv widths and then the linear width: the Nature-CNN layout
  (conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1, linear 512) is ``[32, 64, 64, 512]``, ding_ray's
  default for a 3-D ``obs_shape`` when the config gives no list (``NATURE_CNN``);
- longer lists put DI-engine's residual blocks between; ding_ray does not build those.

The class's own default is DI-engine's, ``[32, 64, 64, 128]``; the models (``make_encoder``) default
to the Nature CNN for frames (see ``make_encoder``). With ``layer_norm=True`` (DI-engine's DreamerV3
option) each conv pads its input to keep ``ceil(size / 2)`` ("same" padding), steps by 2 whatever
``stride`` says, has no bias, and is followed by a layer norm over its channels (eps 1e-3), then the
activation, as DI-engine's builds it.

uint8 observations are scaled to float32 in [0, 1] inside ``forward`` (``float_obs``); float ones go
through as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ding_ray.errors import ConfigError, NotSupportedError, ShapeError
from ding_ray.model.common import ACTIVATIONS, FCEncoder, activation_name, float_obs

NATURE_CNN = (32, 64, 64, 512)  # the models' default encoder_hidden_size_list of a 3-D obs_shape
CONV_ENCODER_DEFAULT = (32, 64, 64, 128)  # DI-engine's ConvEncoder's own default hidden_size_list
LAYER_NORM_STRIDE, LAYER_NORM_EPS = 2, 1e-3  # DI-engine's layer_norm convs: stride 2, LayerNorm eps
# ... of frames too small for it (under 36 pixels a side, as MinAtar's 10x10): the network of the
# MinAtar paper (Young & Tian, 2019), one conv 16 3x3/1 and a linear 128
SMALL_CNN, SMALL_KERNEL_SIZE, SMALL_STRIDE, NATURE_MIN_SIZE = (16, 128), (3,), (1,), 36
MLP_DEFAULT = (128, 128, 64)  # ... and of a vector one (DI-engine's DQN and VAC default)
KERNEL_SIZE = (8, 4, 3)  # DI-engine's ConvEncoder defaults
STRIDE = (4, 2, 1)


def is_image_shape(obs_shape: int | Sequence[int]) -> bool:
    return not isinstance(obs_shape, int) and len(obs_shape) == 3


def check_channels_first(obs_shape: Sequence[int], where: str = "policy.model.obs_shape") -> tuple[int, ...]:
    """``obs_shape`` as a tuple of 3 ints, refused when it looks channels-last, ``(H, W, C)``."""
    shape = tuple(int(n) for n in obs_shape)
    c, h, w = shape
    if w < c and w < h:  # the smallest size last: (84, 84, 4), (210, 160, 3)
        raise ConfigError(
            f"{where}={list(shape)} looks channels-last (height, width, channels); ding_ray's conv "
            f"encoder takes channels first, as DI-engine's: give {[w, c, h]} and hand the model "
            "observations of that shape (frames stacked on the first axis, e.g. np.moveaxis(obs, -1, 0) "
            "in an observation wrapper)."
        )
    return shape


class ConvEncoder(nn.Module):
    """``obs [B, C, H, W]`` (uint8 or float) -> features ``[B, hidden_size_list[-1]]``; see the module
    docstring for what each entry of ``hidden_size_list`` means and what ``layer_norm`` builds.
    ``norm_type`` is accepted and adds nothing, as in DI-engine (it normalises only the residual
    blocks)."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        hidden_size_list: Sequence[int] = CONV_ENCODER_DEFAULT,
        activation: str | nn.Module | None = "relu",
        kernel_size: Sequence[int] = KERNEL_SIZE,
        stride: Sequence[int] = STRIDE,
        padding: Sequence[int] | None = None,
        layer_norm: bool = False,
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        self.obs_shape = check_channels_first(obs_shape)
        hidden = [int(n) for n in hidden_size_list]
        kernel_size, stride = [int(k) for k in kernel_size], [int(s) for s in stride]
        padding = [0] * len(kernel_size) if padding is None else [int(p) for p in padding]
        self.layer_norm = bool(layer_norm)
        if self.layer_norm:  # DI-engine's DreamerV3 convs: stride 2 and "same" padding, whatever is given
            stride = [LAYER_NORM_STRIDE] * len(kernel_size)
        k = len(kernel_size)
        if not k or len(stride) != k or len(padding) != k:
            raise ConfigError(
                f"A conv encoder needs one kernel size, stride and padding per conv layer; got kernel sizes "
                f"{kernel_size}, strides {stride}, paddings {padding}."
            )
        if len(hidden) < k:
            raise ConfigError(
                f"encoder_hidden_size_list={hidden} is too short for {k} conv layers: give the {k} conv "
                f"channel counts, then (optionally) the width of the linear layer, e.g. {list(NATURE_CNN)} "
                "(the Nature CNN)."
            )
        if len(hidden) > k + 1:
            raise NotSupportedError(
                f"encoder_hidden_size_list={hidden} has {len(hidden)} entries for {k} conv layers: DI-engine "
                f"adds residual blocks for the entries between the {k} conv widths and the last (linear) "
                f"width, which ding_ray's ConvEncoder does not build. Give {k} or {k + 1} entries, e.g. "
                f"{list(NATURE_CNN)}."
            )
        self.activation = ACTIVATIONS[activation_name(activation)]
        channels, height, width = self.obs_shape
        convs = []
        for i, (out, size, step, pad) in enumerate(zip(hidden, kernel_size, stride, padding)):
            if self.layer_norm:
                new_height, new_width = -(-height // step), -(-width // step)
            else:
                new_height, new_width = (
                    (height + 2 * pad - size) // step + 1,
                    (width + 2 * pad - size) // step + 1,
                )
            if new_height < 1 or new_width < 1:
                raise ConfigError(
                    f"obs_shape={list(self.obs_shape)} is too small for the conv stack: conv layer {i} "
                    f"(kernel {size}, stride {step}) gets a {height}x{width} input. Give larger frames, or "
                    f"smaller kernels and strides (policy.model.encoder_kernel_size / encoder_stride; "
                    f"now {kernel_size} / {stride})."
                )
            if self.layer_norm:
                convs.append(nn.Conv2d(channels, out, size, step, bias=False))
            else:
                convs.append(nn.Conv2d(channels, out, size, step, pad))
            channels, height, width = out, new_height, new_width
        self.convs = nn.ModuleList(convs)
        self.norms = (
            nn.ModuleList(nn.LayerNorm(c.out_channels, eps=LAYER_NORM_EPS) for c in convs)
            if self.layer_norm
            else None
        )
        # DI-engine sizes the linear layer with a forward of torch.randn(1, *obs_shape); drawing the
        # same numbers keeps a seed's random stream, and so the initial weights from here on, DI-engine's
        torch.randn(1, *self.obs_shape)
        self.fc = nn.Linear(channels * height * width, hidden[-1])
        self.output_size = hidden[-1]
        self._norm_type = norm_type

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.shape[1:] != self.obs_shape:
            raise ShapeError(
                f"The conv encoder takes observations of shape (batch, *{self.obs_shape}) (channels "
                f"first), got {tuple(obs.shape)}. Make the env's observations match "
                "policy.model.obs_shape (move the channel axis first if it is last)."
            )
        x = float_obs(obs)
        activation = self.activation
        if self.norms is None:
            for conv in self.convs:
                x = activation(conv(x))
        else:
            for conv, norm in zip(self.convs, self.norms):
                x = _same_padded(x, conv.kernel_size[0], conv.stride[0])
                x = norm(conv(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)  # normalise over channels
                x = activation(x)
        return F.linear(x.flatten(1), self.fc.weight, self.fc.bias)


def _same_padded(x: torch.Tensor, kernel: int, stride: int) -> torch.Tensor:
    """``x`` padded (less before than after when odd) so a conv keeps ``ceil(size / stride)``."""
    pads = []
    for size in (x.shape[-1], x.shape[-2]):  # F.pad takes the last axis first
        total = max((-(-size // stride) - 1) * stride + kernel - size, 0)
        pads += [total // 2, total - total // 2]
    return F.pad(x, pads) if any(pads) else x


def make_encoder(
    obs_shape: int | Sequence[int],
    hidden_size_list: Sequence[int] | None,
    activation: str | nn.Module | None = "relu",
    norm_type: str | None = None,
    dropout: float | None = None,
    kernel_size: Sequence[int] | None = None,
    stride: Sequence[int] | None = None,
) -> FCEncoder | ConvEncoder:
    """The encoder DI-engine's DQN and VAC build for ``obs_shape``: a ``ConvEncoder`` for a 3-D one
    (``hidden_size_list`` None: the Nature CNN, or for frames under 36 pixels a side with no kernel
    sizes or strides given, MinAtar's ``SMALL_CNN``), else an ``FCEncoder`` (None: ``MLP_DEFAULT``)."""
    if not is_image_shape(obs_shape):
        if kernel_size is not None or stride is not None:
            raise ConfigError(
                f"policy.model.encoder_kernel_size / encoder_stride are for image observations (a 3-D "
                f"obs_shape (channels, height, width)); obs_shape={obs_shape} is a vector: leave them unset."
            )
        hidden = MLP_DEFAULT if hidden_size_list is None else hidden_size_list
        return FCEncoder(obs_shape, list(hidden), activation, norm_type, dropout)
    if dropout:
        raise ConfigError(
            "policy.model.dropout is not supported with a conv encoder (as in DI-engine, whose "
            "ConvEncoder has no dropout): leave it unset for image observations."
        )
    hidden = NATURE_CNN if hidden_size_list is None else hidden_size_list
    small = min(int(n) for n in obs_shape[1:]) < NATURE_MIN_SIZE
    if hidden_size_list is None and kernel_size is None and stride is None and small:
        hidden, kernel_size, stride = SMALL_CNN, SMALL_KERNEL_SIZE, SMALL_STRIDE
    return ConvEncoder(
        obs_shape,
        list(hidden),
        activation,
        KERNEL_SIZE if kernel_size is None else kernel_size,
        STRIDE if stride is None else stride,
        norm_type=norm_type,
    )
