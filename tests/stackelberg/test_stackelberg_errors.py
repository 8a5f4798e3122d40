"""Bad input raises at once with the project's message (argument, rule, value)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from optzoo.stackelberg import (
    StackelbergGD,
    curvature,
    exact_head_best_response,
    hessian_top_eig,
    layer_decay_param_groups,
    mup_sgd_param_groups,
    split_head,
    stackelberg_objective,
    stackelberg_param_groups,
)


def _net():
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def test_head_ratio_must_be_positive():
    with pytest.raises(ValueError, match=r"'head_ratio' argument of stackelberg_param_groups must be "
                                         r"a finite real number in \(0, inf\)\. Got 0\.0"):
        stackelberg_param_groups(_net(), 0.1, 0.0)
    with pytest.raises(ValueError, match=r"'head_ratio' argument of StackelbergGD .* Got -2\.0"):
        StackelbergGD(*split_head(_net()), head_ratio=-2.0)


def test_ratio_below_one_warns():
    with pytest.warns(UserWarning, match="reverse of the Stackelberg ordering"):
        stackelberg_param_groups(_net(), 0.1, 0.5)


def test_lr_must_be_positive():
    with pytest.raises(ValueError, match=r"'body_lr' argument of stackelberg_param_groups .* Got -0\.1"):
        stackelberg_param_groups(_net(), -0.1)
    with pytest.raises(ValueError, match=r"'lr' argument of StackelbergGD .* Got 0\.0"):
        StackelbergGD(*split_head(_net()), lr=0.0)
    body, head = split_head(_net())
    with pytest.raises(ValueError, match=r"'lr' argument of StackelbergGD \(head group\)"):
        StackelbergGD(body, [{"params": head, "lr": -1.0}])


def test_head_name_that_matches_nothing():
    for fn in (split_head, lambda m, h: stackelberg_param_groups(m, 0.1, head=h)):
        with pytest.raises(ValueError, match=r"'head' argument of .* must be the name of a submodule "
                                             r"or parameter of the model .* Got 'fc_out'"):
            fn(_net(), "fc_out")


def test_parameter_in_both_groups():
    body, head = split_head(_net())
    with pytest.raises(ValueError, match=r"'head_params' argument of StackelbergGD must be disjoint"):
        StackelbergGD(body, head + body[:1])


def test_head_cannot_be_the_whole_model_or_foreign():
    net = _net()
    with pytest.raises(ValueError, match=r"'head' argument of split_head must be a strict part"):
        split_head(net, lambda n, p: True)
    with pytest.raises(ValueError, match=r"'head' argument of split_head must be an iterable of "
                                         r"parameters of the model"):
        split_head(net, [nn.Parameter(torch.zeros(2))])
    with pytest.raises(TypeError, match=r"'model' argument of split_head must be a torch.nn.Module"):
        split_head([1, 2])


def test_alternating_needs_a_closure_and_finite_losses():
    opt = StackelbergGD(*split_head(_net()))
    with pytest.raises(ValueError, match=r"'closure' argument of StackelbergGD\.step"):
        opt.step()
    with pytest.raises(FloatingPointError, match="NaN/inf objective"):
        opt.step(lambda: torch.tensor(float("inf")))


def test_best_response_validation():
    H, Y = torch.randn(10, 3), torch.randn(10, 2)
    with pytest.raises(ValueError, match=r"'lam' argument of exact_head_best_response .* Got 0\.0"):
        exact_head_best_response(H, Y, lam=0.0)
    with pytest.raises(ValueError, match=r"'targets' argument of stackelberg_objective"):
        stackelberg_objective(H, torch.randn(9, 2))
    with pytest.raises(ValueError, match=r"'form' argument of stackelberg_objective must be one of"):
        stackelberg_objective(H, Y, form="dual")
    with pytest.raises(ValueError, match=r"'features' argument of exact_head_best_response must be "
                                         r"finite"):
        exact_head_best_response(H * float("nan"), Y)
    # December trial D14: rank-deficient features at a tiny lam gave a raw LinAlgError
    with pytest.raises(ValueError, match=r"'lam' argument of exact_head_best_response must be large "
                                         r"enough that the ridge system is solvable"):
        exact_head_best_response(torch.ones(20, 5), torch.randn(20), lam=1e-12)
    # trial 2, item 6: no sample returned a zero head
    with pytest.raises(ValueError, match=r"'features' argument of exact_head_best_response must be a "
                                         r"tensor of shape \(\.\.\., N, m\) with N >= 1 sample"):
        exact_head_best_response(H[:0], Y[:0])


def test_curvature_validation():
    net, X, y = _net(), torch.randn(8, 3), torch.randn(8, 2)
    with pytest.raises(ValueError, match=r"'loss' argument of curvature must be 'mse' when 'phi'"):
        curvature(net, lambda o, t: ((o - t) ** 2).mean(), X, y)
    with pytest.raises(ValueError, match=r"'which' argument of curvature must be one of"):
        curvature(net, "mse", X, y, which=("hessian",))
    with pytest.raises(ValueError, match=r"'method' argument of hessian_top_eig must be one of"):
        hessian_top_eig(lambda x: (x ** 2).sum(), [torch.ones(2)], method="arnoldi")
    with pytest.raises(ValueError, match=r"'max_iter' argument of hessian_top_eig must be an int in"):
        hessian_top_eig(lambda x: (x ** 2).sum(), [torch.ones(2)], max_iter=0)
    # December trial D14: these were raised deep inside (or raw), naming other functions
    with pytest.raises(ValueError, match=r"'max_iter' argument of curvature must be an int in"):
        curvature(net, "mse", X, y, max_iter=0)
    with pytest.raises(ValueError, match=r"'lam' argument of curvature must be a finite real number "
                                         r"in \(0, inf\)\. Got 0\.0"):
        curvature(net, "mse", X, y, lam=0.0)
    with pytest.raises(ValueError, match=r"'Y' argument of curvature must be targets of shape "
                                         r"\(N=8, \d+\)"):
        curvature(net, "mse", X, torch.randn(8, 7))


def test_baseline_group_validation():
    with pytest.raises(ValueError, match=r"'decay' argument of layer_decay_param_groups"):
        layer_decay_param_groups(_net(), 0.1, decay=1.5)
    with pytest.raises(ValueError, match=r"'width_mult' argument of mup_sgd_param_groups"):
        mup_sgd_param_groups(_net(), 0.1, width_mult=0.0)
    with pytest.raises(ValueError, match=r"'model' argument of mup_sgd_param_groups"):
        mup_sgd_param_groups(nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2)), 0.1,
                             width_mult=2.0)
