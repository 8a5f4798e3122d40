"""stackelberg rows of the common table (tests/test_common.py)."""

from __future__ import annotations

import torch


def _problem() -> dict:
    g = torch.Generator().manual_seed(0)
    return {"params": [torch.nn.Parameter(0.5 * torch.randn(3, 2, generator=g, dtype=torch.float64)),
                       torch.nn.Parameter(0.5 * torch.randn(1, 3, generator=g, dtype=torch.float64))],
            "X": torch.randn(16, 2, generator=g, dtype=torch.float64),
            "y": torch.randn(16, 1, generator=g, dtype=torch.float64)}


def _loss(pb, nan=False):
    theta, w = pb["params"]
    out = torch.tanh(pb["X"] @ theta.T) @ w.T
    f = ((out - pb["y"]) ** 2).mean()
    return f * float("nan") if nan else f


def _step(opt, pb, nan=False):
    def closure():
        opt.zero_grad()
        f = _loss(pb, nan)
        f.backward()
        return f

    return opt.step(closure)


def rows(Bad, SolverInfo, OptimInfo):
    from optzoo.stackelberg import StackelbergGD

    def make_alt(pb, seed):
        return StackelbergGD(pb["params"][:1], pb["params"][1:], lr=0.1, head_ratio=5.0)

    def make_sim(pb, seed):
        return StackelbergGD(pb["params"][:1], pb["params"][1:], lr=0.1, head_ratio=5.0,
                             mode="simultaneous", momentum=0.9, weight_decay=1e-3)

    def p():
        return _problem()["params"]

    def nan_step(make):
        def call():
            pb = _problem()
            _step(make(pb, 0), pb, nan=True)
        return call

    bad = [
        Bad("lr<=0", lambda: StackelbergGD(p()[:1], p()[1:], lr=0.0), ValueError,
            r"'lr' argument of StackelbergGD must be a finite real number in \(0, inf\)\. Got 0\.0"),
        Bad("head_ratio<=0", lambda: StackelbergGD(p()[:1], p()[1:], head_ratio=-1.0), ValueError,
            r"'head_ratio' argument of StackelbergGD must be a finite real number in \(0, inf\)"),
        Bad("parameter in both groups", lambda: (lambda q: StackelbergGD(q, q[:1]))(p()), ValueError,
            r"'head_params' argument of StackelbergGD must be disjoint from body_params"),
        Bad("mode", lambda: StackelbergGD(p()[:1], p()[1:], mode="jacobi"), ValueError,
            r"'mode' argument of StackelbergGD must be one of 'alternating', 'simultaneous'"),
        Bad("head_steps=0", lambda: StackelbergGD(p()[:1], p()[1:], head_steps=0), ValueError,
            r"'head_steps' argument of StackelbergGD must be an int in \[1, inf\]"),
        Bad("body not tensors", lambda: StackelbergGD([1.0], p()[1:]), TypeError,
            r"'body_params' argument of StackelbergGD"),
        Bad("no closure (alternating)", lambda: StackelbergGD(p()[:1], p()[1:]).step(), ValueError,
            r"'closure' argument of StackelbergGD\.step must be a closure in alternating mode"),
        Bad("closure returns None (trial D14)", lambda: StackelbergGD(p()[:1], p()[1:]).step(lambda: None),
            TypeError, r"'closure' argument of StackelbergGD\.step must be a closure returning the loss "
                       r"\(a scalar tensor, after calling backward\)\. Got 'NoneType'"),
    ]
    nonfinite_exc = (FloatingPointError, r"NaN/inf objective")
    return ([OptimInfo("StackelbergGD-alternating", _problem, make_alt, _step, bad=bad,
                       nonfinite=nan_step(make_alt), nonfinite_exc=nonfinite_exc),
             OptimInfo("StackelbergGD-simultaneous(momentum)", _problem, make_sim, _step,
                       nonfinite=nan_step(make_sim), nonfinite_exc=nonfinite_exc)], [])
