"""Image metrics: PSNR and SSIM of images in [0, 1].

``torchmetrics`` (``peak_signal_noise_ratio``, ``structural_similarity_index_measure``) is
used when it is installed; otherwise our implementation of the same definitions (Wang et al.
2004: 11x11 Gaussian window, sigma 1.5, K1 = 0.01, K2 = 0.03, data range 1; as torchmetrics
1.9 computes it: reflection padding by 5 px, variances clamped at 0, mean over the whole
image; the tests check the two agree to 1e-6). :data:`BACKEND` says which one is in use.
"""

from __future__ import annotations

import importlib.util

import torch
from torch import Tensor

from optzoo._core.validation import fail

__all__ = ["BACKEND", "psnr", "ssim", "ssim_tensor"]

BACKEND = "torchmetrics" if importlib.util.find_spec("torchmetrics") else "optzoo"


def _pair(img, ref, owner: str, hwc: bool) -> None:
    """Both torch tensors of one shape; with ``hwc``, ``[H, W, C]`` images of at least 6 x 6 px
    (the 11 x 11 SSIM window is reflection-padded by 5 px)."""
    for name, t in (("img", img), ("ref", ref)):
        if not torch.is_tensor(t):
            fail(name, owner, "a torch tensor", type(t).__name__, exc=TypeError)
    if hwc and (img.dim() != 3 or min(img.shape[:2]) < 6):
        fail("img", owner, "an [H, W, C] image with H, W >= 6 (SSIM's 11 x 11 window is padded "
             "by 5 px)", tuple(img.shape))
    if img.shape != ref.shape:
        fail("ref", owner, f"an image of the shape of img {tuple(img.shape)}", tuple(ref.shape))


def psnr(img: Tensor, ref: Tensor) -> float:
    """PSNR in dB, data range 1."""
    _pair(img, ref, "psnr", hwc=False)
    if BACKEND == "torchmetrics":
        from torchmetrics.functional.image import peak_signal_noise_ratio

        return float(peak_signal_noise_ratio(img.detach().double(), ref.detach().double(), data_range=1.0))
    mse = float(((img.detach() - ref.detach()) ** 2).mean())
    return 10.0 * torch.log10(torch.tensor(1.0 / max(mse, 1e-12))).item()


def _gauss(size: int = 11, sigma: float = 1.5, dtype=torch.float64) -> Tensor:
    x = torch.arange(size, dtype=dtype) - (size - 1) / 2
    g = torch.exp(-(x ** 2) / (2 * sigma ** 2))
    return g / g.sum()


def ssim_tensor(img: Tensor, ref: Tensor) -> Tensor:
    """Differentiable SSIM (our implementation) of ``[H, W, C]`` images; a 0-d tensor."""
    _pair(img, ref, "ssim_tensor", hwc=True)
    x = img.permute(2, 0, 1)[None]
    y = ref.permute(2, 0, 1)[None]
    c = x.shape[1]
    g = _gauss(dtype=x.dtype).to(x.device)
    w = (g[:, None] * g[None, :]).expand(c, 1, 11, 11)
    pad = lambda t: torch.nn.functional.pad(t, (5, 5, 5, 5), mode="reflect")  # noqa: E731
    x, y = pad(x), pad(y)
    f = lambda t: torch.nn.functional.conv2d(t, w, groups=c)  # noqa: E731
    mx, my = f(x), f(y)
    sxx = (f(x * x) - mx ** 2).clamp_min(0.0)
    syy = (f(y * y) - my ** 2).clamp_min(0.0)
    sxy = f(x * y) - mx * my
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    s = ((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx ** 2 + my ** 2 + c1) * (sxx + syy + c2))
    return s.mean()


def ssim(img: Tensor, ref: Tensor) -> float:
    """SSIM of ``[H, W, C]`` images in [0, 1] (window 11, sigma 1.5; images >= 6 px a side)."""
    _pair(img, ref, "ssim", hwc=True)
    if BACKEND == "torchmetrics":
        from torchmetrics.functional.image import structural_similarity_index_measure

        x = img.detach().permute(2, 0, 1)[None].double()
        y = ref.detach().permute(2, 0, 1)[None].double()
        return float(structural_similarity_index_measure(x, y, data_range=1.0))
    return float(ssim_tensor(img.detach().double(), ref.detach().double()))
