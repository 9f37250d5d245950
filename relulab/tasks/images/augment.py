"""Training-time augmentation of seed ``002_…`` §5.2, batched in torch and driven by a generator.

* CIFAR-10: "zero padding each image, 4 pixels per side, and randomly cropping 32x32 sections"
  [stated] — :func:`pad_and_crop`. The seed states no horizontal flip, so none is done.
* ISBI 2012: "90 degree rotations, reflections, and elastic warps described in Ronneberger et
  al. [2015]" [stated] — :func:`dihedral` and :func:`elastic_warp`, combined in
  :func:`isbi_augment`. Ronneberger et al. §3.1: displacement vectors on a coarse 3 × 3 grid,
  drawn from a Gaussian with 10 pixels standard deviation, per-pixel displacements by bicubic
  interpolation.

Random draws are made on the CPU with the given ``torch.Generator`` (then moved to the images'
device), so the same generator state gives the same augmentation on every device. Images may
have any leading batch dimensions: ``(…, C, H, W)``; masks ``(…, H, W)``.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional

__all__ = ["dihedral", "displacement_field", "elastic_warp", "isbi_augment", "pad_and_crop"]


def _flat_batch(images: Tensor) -> tuple[Tensor, tuple[int, ...]]:
    if images.ndim < 3:
        raise ValueError(f"expected images (…, C, H, W), got shape {tuple(images.shape)}")
    lead = tuple(images.shape[:-3])
    return images.reshape(-1, *images.shape[-3:]), lead


def pad_and_crop(
    images: Tensor, padding: int = 4, *, generator: torch.Generator | None = None
) -> Tensor:
    r"""Zero-pad each image by ``padding`` pixels per side, then crop a random ``H × W`` window.

    The CIFAR-10 augmentation of seed ``002_…`` §5.2 (padding 4, 32 × 32 crops). Each image's
    window offset :math:`(i, j)` is uniform on :math:`\{0, \dots, 2p\}^2`, independently.

    Args:
        images: ``(…, C, H, W)``, any dtype.
        padding: pixels of zeros added on each side, :math:`p`.
        generator: source of the offsets (CPU).

    Returns:
        Augmented images, same shape, dtype and device.

    Example:
        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> pad_and_crop(x, 1, generator=torch.Generator().manual_seed(0)).shape
        torch.Size([1, 1, 4, 4])
    """
    flat, lead = _flat_batch(images)
    n, c, h, w = flat.shape
    padded = functional.pad(flat, (padding, padding, padding, padding))
    offsets = torch.randint(0, 2 * padding + 1, (n, 2), generator=generator).to(images.device)
    rows = offsets[:, 0, None] + torch.arange(h, device=images.device)  # (n, h)
    cols = offsets[:, 1, None] + torch.arange(w, device=images.device)  # (n, w)
    batch = torch.arange(n, device=images.device)[:, None, None, None]
    channel = torch.arange(c, device=images.device)[None, :, None, None]
    cropped = padded[batch, channel, rows[:, None, :, None], cols[:, None, None, :]]
    return cropped.reshape(*lead, c, h, w)


def dihedral(
    images: Tensor, masks: Tensor | None = None, *, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor | None]:
    """A random element of the square's symmetry group per image: a 90° rotation and a reflection.

    Each image draws ``k ∈ {0, 1, 2, 3}`` quarter turns and whether to mirror left–right first,
    uniformly and independently (8 outcomes); its mask gets the same transform. Seed
    ``002_…`` §5.2 ("90 degree rotations, reflections"). Images must be square.

    Args:
        images: ``(…, C, H, H)``.
        masks: ``(…, H, H)`` or ``None``.
        generator: source of the draws (CPU).

    Returns:
        ``(images, masks)`` transformed (``masks`` ``None`` if none were given).

    Example:
        >>> x = torch.rand(2, 1, 8, 8)
        >>> y, _ = dihedral(x, generator=torch.Generator().manual_seed(0))
        >>> y.shape
        torch.Size([2, 1, 8, 8])
    """
    flat, lead = _flat_batch(images)
    if flat.shape[-1] != flat.shape[-2]:
        raise ValueError(f"90° rotations need square images, got {tuple(flat.shape[-2:])}")
    flat_masks = None if masks is None else masks.reshape(-1, *masks.shape[-2:])
    draws = torch.randint(0, 8, (len(flat),), generator=generator)
    out_images = flat.clone()
    out_masks = None if flat_masks is None else flat_masks.clone()
    for outcome in range(8):
        chosen = (draws == outcome).nonzero().flatten().to(images.device)
        if not len(chosen):
            continue
        turns, mirror = divmod(outcome, 2)

        def transform(x: Tensor, turns: int = turns, mirror: int = mirror) -> Tensor:
            x = x.flip(-1) if mirror else x
            return torch.rot90(x, turns, dims=(-2, -1))

        out_images[chosen] = transform(flat[chosen])
        if out_masks is not None and flat_masks is not None:  # both or neither
            out_masks[chosen] = transform(flat_masks[chosen])
    result_masks = None if out_masks is None or masks is None else out_masks.reshape(masks.shape)
    return out_images.reshape(*lead, *flat.shape[1:]), result_masks


def displacement_field(
    n: int,
    height: int,
    width: int,
    *,
    sigma: float = 10.0,
    grid: int = 3,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> Tensor:
    r"""Smooth random displacements ``(n, 2, H, W)`` in pixels (rows, then columns).

    Ronneberger et al. (2015) §3.1: displacements on a coarse ``grid × grid`` lattice spanning the
    image (corners included), :math:`\mathcal N(0, \sigma^2)` with :math:`\sigma = 10` pixels,
    bicubically interpolated to every pixel.
    """
    coarse = torch.randn((n, 2, grid, grid), generator=generator, dtype=torch.float64) * sigma
    field = functional.interpolate(coarse, size=(height, width), mode="bicubic", align_corners=True)
    return field.to(device=device, dtype=dtype)


def elastic_warp(
    images: Tensor,
    masks: Tensor | None = None,
    *,
    sigma: float = 10.0,
    grid: int = 3,
    generator: torch.Generator | None = None,
    field: Tensor | None = None,
) -> tuple[Tensor, Tensor | None]:
    r"""Elastic deformation of Ronneberger et al. (2015), as seed ``002_…`` §5.2 uses on ISBI.

    Output pixel :math:`(i, j)` samples the input at :math:`(i + \Delta_y, j + \Delta_x)` with
    the smooth field of :func:`displacement_field`: bilinearly for images, nearest-neighbour for
    masks (labels stay labels); beyond the border the image is mirrored about its edge pixels.
    Implemented with ``torch.nn.functional.grid_sample`` (``align_corners=True``).

    Args:
        images: floating ``(…, C, H, W)``.
        masks: ``(…, H, W)`` of any dtype, or ``None``.
        sigma: standard deviation of the coarse displacements, in pixels.
        grid: coarse lattice points per side.
        generator: source of the displacements (CPU).
        field: a given displacement field ``(N, 2, H, W)`` (``N`` = flattened batch) instead of
            a random one.

    Returns:
        ``(images, masks)`` warped, same shapes and dtypes.

    Example:
        >>> x = torch.rand(2, 1, 16, 16)
        >>> y, _ = elastic_warp(x, generator=torch.Generator().manual_seed(0))
        >>> y.shape
        torch.Size([2, 1, 16, 16])
    """
    flat, lead = _flat_batch(images)
    if not flat.is_floating_point():
        raise ValueError(f"elastic_warp needs floating images, got {flat.dtype}")
    n, _, h, w = flat.shape
    if field is None:
        field = displacement_field(n, h, w, sigma=sigma, grid=grid, generator=generator)
    field = field.to(device=flat.device, dtype=flat.dtype)
    rows = torch.arange(h, device=flat.device, dtype=flat.dtype)[:, None] + field[:, 0]
    cols = torch.arange(w, device=flat.device, dtype=flat.dtype)[None, :] + field[:, 1]
    sampling = torch.stack([2 * cols / max(w - 1, 1) - 1, 2 * rows / max(h - 1, 1) - 1], dim=-1)
    warped = functional.grid_sample(
        flat, sampling, mode="bilinear", padding_mode="reflection", align_corners=True
    )
    warped_masks = None
    if masks is not None:
        flat_masks = masks.reshape(-1, 1, h, w).to(flat.dtype)
        moved = functional.grid_sample(
            flat_masks, sampling, mode="nearest", padding_mode="reflection", align_corners=True
        )
        warped_masks = moved.round().to(masks.dtype).reshape(masks.shape)
    return warped.reshape(*lead, *flat.shape[1:]), warped_masks


def isbi_augment(
    images: Tensor,
    masks: Tensor,
    *,
    sigma: float = 10.0,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """Seed ``002_…`` §5.2's ISBI augmentation: a random dihedral transform, then an elastic warp.

    Args:
        images: floating ``(…, C, H, H)``.
        masks: ``(…, H, H)``.
        sigma: elastic displacement standard deviation in pixels (Ronneberger et al.: 10).
        generator: source of all draws (CPU).

    Returns:
        ``(images, masks)`` augmented.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x, m = isbi_augment(torch.rand(1, 1, 16, 16), torch.ones(1, 16, 16), generator=g)
        >>> m.unique().tolist()
        [1.0]
    """
    turned, turned_masks = dihedral(images, masks, generator=generator)
    warped, warped_masks = elastic_warp(turned, turned_masks, sigma=sigma, generator=generator)
    assert warped_masks is not None  # masks were given
    return warped, warped_masks
