"""The one GRPO group advantage: both conventions, bit-identical to the expressions ipgrm
and copro wrote before they shared it (so no reproduced number moves)."""

import numpy as np
import pytest
import torch

from optzoo._core.advantages import group_advantages


def test_population_numpy_equals_ipgrm_old_expression_bitwise():
    g = np.random.default_rng(0).normal(size=(64, 8)) * 3 + 1
    old = (g - g.mean(1, keepdims=True)) / (g.std(1, keepdims=True) + 1e-6)
    new = group_advantages(g, std="population", eps=1e-6)
    assert isinstance(new, np.ndarray) and np.array_equal(new, old)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", [(16, 8), (16, 8, 3)])
def test_unbiased_torch_equals_copro_old_expression_bitwise(dtype, shape):
    r = torch.randn(*shape, generator=torch.Generator().manual_seed(1), dtype=dtype)
    old = (r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)
    new = group_advantages(r, std="unbiased", eps=1e-4)
    assert torch.is_tensor(new) and new.dtype == dtype and torch.equal(new, old)


def test_conventions_differ_by_sqrt_g_minus_one_over_g_and_agree_across_backends():
    G = 8
    r = np.random.default_rng(2).normal(size=(5, G))
    pop = group_advantages(r, std="population", eps=0.0)
    unb = group_advantages(r, std="unbiased", eps=0.0)
    assert np.allclose(unb, pop * np.sqrt((G - 1) / G))
    t = torch.as_tensor(r)
    for std in ("population", "unbiased"):
        assert np.allclose(group_advantages(t, std=std, eps=1e-4).numpy(),
                           group_advantages(r, std=std, eps=1e-4), rtol=1e-12, atol=1e-14)
    # invariant to a constant shift of a group; zero spread gives zero advantages
    assert np.allclose(group_advantages(r + 5.0, std="unbiased", eps=0.0), unb)
    assert np.array_equal(group_advantages(np.ones((2, 4)), std="unbiased", eps=1e-4), np.zeros((2, 4)))


def test_the_convention_must_be_stated_and_valid():
    with pytest.raises(TypeError):
        group_advantages(np.ones((2, 2)), eps=1e-4)  # no default std: the caller says which
    with pytest.raises(ValueError, match=r"'std' argument of group_advantages must be one of 'population', 'unbiased'"):
        group_advantages(np.ones((2, 2)), std="biased", eps=1e-4)
    with pytest.raises(ValueError, match=r"'eps' argument of group_advantages"):
        group_advantages(np.ones((2, 2)), std="unbiased", eps=-1.0)
