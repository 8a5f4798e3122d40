"""dynamic_gs rows of the common optimizer table (tests/test_common.py)."""

import torch


def _problem():
    g = torch.Generator().manual_seed(0)
    target = torch.randn(6, 2, generator=g, dtype=torch.float64)
    masks = [torch.rand(6, generator=g) < 0.5 for _ in range(64)]
    return {"params": [torch.nn.Parameter(torch.zeros(6, 2, dtype=torch.float64))], "target": target,
            "masks": masks, "t": [0]}


def _grad_step(pb):
    (w,) = pb["params"]
    w.grad = None
    loss = 0.5 * ((w - pb["target"]) ** 2).sum()
    loss.backward()
    m = pb["masks"][pb["t"][0] % len(pb["masks"])]
    pb["t"][0] += 1
    return loss, m


def _uma_make(pb, seed, **kw):
    from optzoo.dynamic_gs import RestateConfig, UpdateMixtureAdam

    kw = {"lr": 0.05, "cc": 1e-3, "restate": RestateConfig(every=2, start=2, end=100, ratio=(0.5, 0.5)), **kw}
    return UpdateMixtureAdam(pb["params"], seed=seed, **kw)


def _uma_step(opt, pb):
    loss, m = _grad_step(pb)
    opt.step(visibility=m)
    return loss


def _saa_problem():
    pb = _problem()
    pb["base"] = torch.optim.SGD(pb["params"], lr=0.1)
    return pb


def _saa_make(pb, seed, **kw):
    from optzoo.dynamic_gs import StochasticAttributeAveraging

    return StochasticAttributeAveraging(pb["params"], **{"start": 1, "every": 2, "prob": 0.5, "seed": seed, **kw})


def _saa_step(opt, pb):
    loss, m = _grad_step(pb)
    pb["base"].step()
    opt.step(visibility=m)
    return loss


def _masked_make(pb, seed, **kw):
    from optzoo.dynamic_gs import MaskedAdam

    return MaskedAdam(pb["params"], **{"lr": 0.05, **kw})


def _nan(make, step_kw="visibility"):
    def call():
        pb = _problem()
        opt = make(pb, 0)
        (w,) = pb["params"]
        w.grad = torch.full_like(w, float("nan"))
        opt.step(visibility=torch.ones(6, dtype=torch.bool))
    return call


def rows(Bad, SolverInfo, OptimInfo):
    from optzoo.dynamic_gs import MaskedAdam, StochasticAttributeAveraging, UpdateMixtureAdam

    def p():
        return _problem()["params"]

    uma_bad = [
        Bad("dynamic_gs-lr<0", lambda: UpdateMixtureAdam(p(), lr=-1.0), ValueError,
            r"'lr' argument of UpdateMixtureAdam must be a finite real number in \[0, inf\]\. Got -1\.0"),
        Bad("dynamic_gs-cc<0", lambda: UpdateMixtureAdam(p(), cc=-0.1), ValueError, r"'cc' argument of UpdateMixtureAdam"),
        Bad("dynamic_gs-seed<0", lambda: UpdateMixtureAdam(p(), seed=-1), ValueError, r"'seed' argument of UpdateMixtureAdam"),
        Bad("dynamic_gs-mask missing", lambda: _uma_step(_uma_make(_problem(), 0), {**_problem(), "masks": [None]}),
            ValueError, r"'visibility' argument of UpdateMixtureAdam"),
        Bad("dynamic_gs-foreign state_dict", lambda: UpdateMixtureAdam(p()).load_state_dict(
            torch.optim.SGD(p(), lr=0.1).state_dict()), ValueError, r"'state_dict' argument of UpdateMixtureAdam.load_state_dict"),
    ]
    saa_bad = [
        Bad("dynamic_gs-prob>1", lambda: StochasticAttributeAveraging(p(), prob=2.0), ValueError,
            r"'prob' argument of StochasticAttributeAveraging must be a finite real number in \[0, 1\]"),
        Bad("dynamic_gs-every=0", lambda: StochasticAttributeAveraging(p(), every=0), ValueError,
            r"'every' argument of StochasticAttributeAveraging"),
    ]
    masked_bad = [
        Bad("dynamic_gs-eps<0", lambda: MaskedAdam(p(), eps=-1.0), ValueError, r"'eps' argument of MaskedAdam"),
        Bad("dynamic_gs-no mask", lambda: MaskedAdam(p()).step(), ValueError, r"'visibility' argument of MaskedAdam.step"),
    ]
    optimizers = [
        OptimInfo("UpdateMixtureAdam-dynamic_gs", _problem, _uma_make, _uma_step, bad=uma_bad, stochastic=True,
                  nonfinite=_nan(_uma_make), nonfinite_exc=(FloatingPointError, r"NaN/inf gradient")),
        OptimInfo("StochasticAttributeAveraging-dynamic_gs", _saa_problem, _saa_make, _saa_step, bad=saa_bad,
                  stochastic=True),
        OptimInfo("MaskedAdam-dynamic_gs", _problem, _masked_make, _uma_step, bad=masked_bad,
                  nonfinite=_nan(_masked_make), nonfinite_exc=(FloatingPointError, r"NaN/inf gradient")),
    ]
    return optimizers, []
