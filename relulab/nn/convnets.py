r"""The two convolutional networks of seed ``002_…`` §3.3 and §5, with a channel-width multiplier.

* :class:`AllCNNC` — ALL-CNN-C (Springenberg et al. 2014) as seed ``002_…`` §3.3 uses it on
  CIFAR-10: nine convolutions, global average pooling, one fully connected output layer;
  reflection padding wherever padding is needed [S]:

  ==== ================ ========= =========================
  #    layer            channels  padding / stride
  ==== ================ ========= =========================
  1–2  conv 3×3         96        reflect 1
  3    conv 3×3         96        reflect 1, stride 2
  4–5  conv 3×3         192       reflect 1
  6    conv 3×3         192       reflect 1, stride 2
  7    conv 3×3         192       none ("valid", as Springenberg's 8×8 → 6×6) [I]
  8    conv 1×1         192
  9    conv 1×1         n_classes
  10   global average pooling, then Linear(n_classes → n_classes)
  ==== ================ ========= =========================

  ReLU after every convolution; the fully connected output has none (logits). Springenberg's
  dropout is not used (the seed does not mention it) [I].

* :class:`UNet` — the UNet of Ronneberger et al. (2015) with 23 convolutions and 4 max-pooling
  layers, skip connections by concatenation, and reflection padding so every convolution keeps
  the spatial size [S]. Channels 64, 128, 256, 512, 1024 (times the width). Each level is two
  3×3 convolutions with ReLU; each step up is an *up-convolution* — nearest-neighbour 2×
  upsampling then a 2×2 convolution halving the channels, without ReLU [I: the seed keeps sizes
  with padding, so the transposed convolution is written as upsample + conv, which keeps every
  layer an ``nn.Conv2d`` for the data-dependent initialisations] — concatenated with the
  encoder's features of the same level; a final 1×1 convolution gives ``n_classes`` logits per
  pixel. Layers in call order: 8 encoder convolutions, 2 at the bottom, then per level up one
  up-convolution and two convolutions (12), then the 1×1 output: 23.

``batchnorm=True`` puts ``nn.BatchNorm2d`` (affine, PyTorch defaults) after every convolution but
the output layer, before its ReLU: seed §5's BatchNorm networks [I: the seed does not say where].
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["AllCNNC", "UNet", "channels"]


def channels(base: int, width: float) -> int:
    """``round(base · width)``, at least 1: the channel count of a layer at a width multiplier.

    Example:
        >>> channels(96, 0.125), channels(64, 1 / 64)
        (12, 1)
    """
    return max(1, round(base * width))


def _conv(
    c_in: int,
    c_out: int,
    kernel: int,
    stride: int = 1,
    padding: int | tuple[int, int, int, int] = 0,  # (left, right, top, bottom)
) -> nn.Module:
    """A convolution with reflection padding (``nn.ReflectionPad2d`` then a valid conv)."""
    conv = nn.Conv2d(c_in, c_out, kernel, stride=stride)
    if padding == 0:
        return conv
    return nn.Sequential(nn.ReflectionPad2d(padding), conv)


def _block(c_in: int, c_out: int, kernel: int, stride: int, padding, batchnorm: bool):
    layers = [_conv(c_in, c_out, kernel, stride, padding)]
    if batchnorm:
        layers.append(nn.BatchNorm2d(c_out))
    layers.append(nn.ReLU())
    return layers


class AllCNNC(nn.Sequential):
    """ALL-CNN-C with reflection padding and a fully connected output (module docstring).

    Args:
        width: channel multiplier (1.0: 96 and 192 channels).
        in_channels: image channels.
        n_classes: classes (the last 1×1 convolution and the output layer).
        batchnorm: ``BatchNorm2d`` before every ReLU.

    Example:
        >>> net = AllCNNC(width=0.125)
        >>> net(torch.zeros(2, 3, 32, 32)).shape
        torch.Size([2, 10])
        >>> sum(isinstance(m, (nn.Conv2d, nn.Linear)) for m in net.modules())
        10
    """

    def __init__(
        self, width: float = 1.0, in_channels: int = 3, n_classes: int = 10, batchnorm: bool = False
    ) -> None:
        a, b = channels(96, width), channels(192, width)
        plan = [
            (in_channels, a, 3, 1, 1),
            (a, a, 3, 1, 1),
            (a, a, 3, 2, 1),
            (a, b, 3, 1, 1),
            (b, b, 3, 1, 1),
            (b, b, 3, 2, 1),
            (b, b, 3, 1, 0),
            (b, b, 1, 1, 0),
            (b, n_classes, 1, 1, 0),
        ]
        layers: list[nn.Module] = []
        for c_in, c_out, kernel, stride, padding in plan:
            layers += _block(c_in, c_out, kernel, stride, padding, batchnorm)
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(n_classes, n_classes)]
        super().__init__(*layers)


class _Level(nn.Sequential):
    """Two 3×3 convolutions (reflection padding), each followed by [BatchNorm and] ReLU."""

    def __init__(self, c_in: int, c_out: int, batchnorm: bool) -> None:
        super().__init__(
            *_block(c_in, c_out, 3, 1, 1, batchnorm), *_block(c_out, c_out, 3, 1, 1, batchnorm)
        )


class _UpConvolution(nn.Sequential):
    """2× nearest upsampling, then a 2×2 convolution (reflection padding right and bottom)."""

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__(
            nn.Upsample(scale_factor=2.0, mode="nearest"), _conv(c_in, c_out, 2, 1, (0, 1, 0, 1))
        )


class UNet(nn.Module):
    """A size-preserving UNet with 23 convolutions (module docstring).

    Args:
        width: channel multiplier (1.0: 64 … 1024 channels).
        in_channels: image channels.
        n_classes: logits per pixel.
        batchnorm: ``BatchNorm2d`` before every ReLU.
        depth: max-pooling steps (4 in the seed's UNet; the input's sides must be divisible
            by ``2**depth``).

    Example:
        >>> net = UNet(width=1 / 16)
        >>> net(torch.zeros(1, 1, 32, 32)).shape
        torch.Size([1, 2, 32, 32])
        >>> sum(isinstance(m, nn.Conv2d) for m in net.modules())
        23
    """

    def __init__(
        self,
        width: float = 1.0,
        in_channels: int = 1,
        n_classes: int = 2,
        batchnorm: bool = False,
        depth: int = 4,
    ) -> None:
        super().__init__()
        sizes = [channels(64 * 2**k, width) for k in range(depth + 1)]
        self.depth = depth
        self.down = nn.ModuleList()
        c_in = in_channels
        for size in sizes[:-1]:
            self.down.append(_Level(c_in, size, batchnorm))
            c_in = size
        self.pool = nn.MaxPool2d(2)
        self.bottom = _Level(sizes[-2], sizes[-1], batchnorm)
        self.up = nn.ModuleList()
        self.decode = nn.ModuleList()
        for k in range(depth - 1, -1, -1):
            self.up.append(_UpConvolution(sizes[k + 1], sizes[k]))
            self.decode.append(_Level(2 * sizes[k], sizes[k], batchnorm))
        self.output = nn.Conv2d(sizes[0], n_classes, 1)

    def forward(self, x: Tensor) -> Tensor:
        skips = []
        for level in self.down:
            x = level(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottom(x)
        for up, decode, skip in zip(self.up, self.decode, reversed(skips), strict=True):
            x = decode(torch.cat([skip, up(x)], dim=1))
        return self.output(x)
