"""Bad inputs raise at once, naming the argument, the rule and the value."""

import pytest
import torch

from optzoo.dynamic_gs import (
    MaskedAdam,
    RegSpec,
    RestateConfig,
    StochasticAttributeAveraging,
    UpdateMixtureAdam,
    init_stg,
    spacetime_visibility,
    stg_attributes,
)


def _w(n=4):
    w = torch.nn.Parameter(torch.zeros(n, 2))
    w.grad = torch.ones(n, 2)
    return w


@pytest.mark.parametrize("call,exc,match", [
    (lambda: UpdateMixtureAdam([_w()], betas=(0.9, 1.0)), ValueError, r"'betas' argument of UpdateMixtureAdam must be a finite real number in \[0, 1\)"),
    (lambda: UpdateMixtureAdam([_w()], cc=-1.0), ValueError, r"'cc' argument of UpdateMixtureAdam"),
    (lambda: UpdateMixtureAdam([_w()], lr=float("nan")), ValueError, r"'lr' argument of UpdateMixtureAdam"),
    (lambda: UpdateMixtureAdam([_w()], bias_correction="local"), ValueError, r"'bias_correction' argument"),
    (lambda: UpdateMixtureAdam([_w()], denom="mul"), ValueError, r"'denom' argument of UpdateMixtureAdam"),
    (lambda: UpdateMixtureAdam([_w()], restate={"every": 1}), TypeError, r"'restate' argument of UpdateMixtureAdam must be a RestateConfig"),
    (lambda: RestateConfig(ratio=(0.1, 1.5)), ValueError, r"'ratio' argument of RestateConfig must be a finite real number in \[0, 1\]\. Got 1\.5"),
    (lambda: RestateConfig(every=0), ValueError, r"'every' argument of RestateConfig"),
    # December trial D18
    (lambda: RestateConfig(start=100, end=10), ValueError, r"'end' argument of RestateConfig must be greater than start = 100 \(otherwise restating never runs\)\. Got 10"),
    (lambda: __import__("optzoo.dynamic_gs.raster", fromlist=["look_at"]).look_at((1.0, 2.0, 3.0), (1.0, 2.0, 3.0)), ValueError, r"'target' argument of look_at must be a point other than eye"),
    (lambda: RegSpec(clip=0.0), ValueError, r"'clip' argument of RegSpec must be a finite real number in \(0, inf\)"),
    (lambda: RegSpec(kind="rgb_l1"), ValueError, r"'kind' argument of RegSpec must be one of"),
    (lambda: StochasticAttributeAveraging([_w()], prob=1.2), ValueError, r"'prob' argument of StochasticAttributeAveraging"),
    (lambda: StochasticAttributeAveraging([_w()], mix=-0.1), ValueError, r"'mix' argument of StochasticAttributeAveraging"),
    (lambda: UpdateMixtureAdam([_w()]).step(), ValueError, r"'visibility' argument of UpdateMixtureAdam\.step must be a bool mask when sparse=True"),
    (lambda: UpdateMixtureAdam([_w()]).step(visibility=torch.ones(4)), TypeError, r"'visibility' argument of UpdateMixtureAdam must be a tensor of dtype torch.bool"),
    (lambda: UpdateMixtureAdam([_w()]).step(visibility=torch.ones(5, dtype=torch.bool)), ValueError, r"prefixes the parameter's \[4, 2\]"),
    (lambda: MaskedAdam([_w()]).step(), ValueError, r"'visibility' argument of MaskedAdam\.step"),
    (lambda: spacetime_visibility(torch.ones(3), torch.ones(4)), ValueError, r"'temporal_opacity' argument of spacetime_visibility must be a tensor of shape \[3\]"),
    (lambda: init_stg(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2), scale=0.0), ValueError, r"'scale' argument of init_stg"),
    (lambda: stg_attributes({"means": torch.zeros(1, 3)}, 0.0), ValueError, r"'splats' argument of stg_attributes must be a dict with the keys"),
])
def test_bad_inputs(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_sparse_gradients_are_rejected():
    w = torch.nn.Parameter(torch.zeros(3, 2))
    w.grad = torch.zeros(3, 2).to_sparse()
    with pytest.raises(TypeError, match=r"'params' argument of UpdateMixtureAdam must be parameters with dense gradients"):
        UpdateMixtureAdam([w]).step(visibility=torch.ones(3, dtype=torch.bool))


def test_nan_gradient_raises_unless_allowed():
    w = _w()
    w.grad[1, 0] = float("nan")
    with pytest.raises(FloatingPointError, match=r"NaN/inf gradient"):
        UpdateMixtureAdam([w]).step(visibility=torch.ones(4, dtype=torch.bool))
    w2 = _w()
    w2.grad[1, 0] = float("nan")   # an invisible NaN row never enters the update
    UpdateMixtureAdam([w2]).step(visibility=torch.tensor([True, False, True, True]))
    assert torch.isfinite(w2).all()


def test_nan_parameters_are_rejected_by_the_model():
    from optzoo.dynamic_gs import init_stg
    sp = init_stg(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2), requires_grad=False)
    sp["colors"][0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"'colors' argument of stg_attributes must be finite"):
        stg_attributes(sp, 0.0)
