"""zo_sgd's rows of the common optimizer table (tests/test_common.py)."""

import warnings

import torch


def _problem():
    return {"params": [torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64))]}


def _step(opt, pb, loss=None):
    (w,) = pb["params"]
    return opt.step(loss or (lambda: 0.5 * (w ** 2).sum() + w[0] * w[1]))


def _model_problem():
    g = torch.Generator().manual_seed(0)
    lin = torch.nn.Linear(3, 2).double()
    with torch.no_grad():
        for p in lin.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
    return {"params": None, "model": lin, "X": torch.randn(5, 3, generator=g, dtype=torch.float64)}


def _model_step(opt, pb):
    return opt.step(lambda: (pb["model"](pb["X"]) ** 2).mean())


def rows(Bad, SolverInfo, OptimInfo):
    from optzoo import NotConvergedWarning
    from optzoo.zo_sgd import ZOSGD

    def mk(**kw):
        return ZOSGD(_problem()["params"], **kw)

    def make(pb, seed):
        return ZOSGD(pb["params"], lr=0.05, num_perturbations=2, seed=seed)

    def make_jvp(pb, seed):
        return ZOSGD(pb["model"].parameters(), lr=0.05, num_perturbations=3, seed=seed,
                     distribution="rademacher", method="jvp", module=pb["model"])

    def nonfinite():
        pb = _problem()
        opt = make(pb, 0)
        with warnings.catch_warnings():
            warnings.simplefilter("error", NotConvergedWarning)
            _step(opt, pb, loss=lambda: torch.tensor(float("nan")))

    bad = [
        Bad("lr<=0", lambda: mk(lr=0.0), ValueError, r"'lr' argument of ZOSGD must be a finite real number in \(0, inf\)\. Got 0\.0"),
        Bad("eps<=0", lambda: mk(eps=-1e-3), ValueError, r"'eps' argument of ZOSGD must be a finite real number in \(0, inf\)\. Got -0\.001"),
        Bad("eps below float32 resolution (trial D12)",
            lambda: ZOSGD([torch.nn.Parameter(torch.full((64,), 0.5))], eps=1e-12), ValueError,
            r"'eps' argument of ZOSGD must be above the float resolution of most weights \(here "
            r"6e-08 = finfo\(dtype\)\.eps x median\|p\|\).*Got 1e-12"),
        Bad("P<1", lambda: mk(num_perturbations=0), ValueError, r"'num_perturbations' argument of ZOSGD must be an int in \[1, inf\]\. Got 0"),
        Bad("P float", lambda: mk(num_perturbations=2.0), TypeError, r"'num_perturbations' argument of ZOSGD must be an int"),
        Bad("distribution", lambda: mk(distribution="uniform"), ValueError, r"'distribution' argument of ZOSGD must be one of 'gaussian', 'rademacher'\. Got 'uniform'"),
        Bad("method", lambda: mk(method="spsa"), ValueError, r"'method' argument of ZOSGD must be one of"),
        Bad("jvp without module", lambda: mk(method="jvp"), TypeError, r"'module' argument of ZOSGD"),
        Bad("seed<0", lambda: mk(seed=-1), ValueError, r"'seed' argument of ZOSGD must be an int in \[0, inf\]"),
        Bad("integer params", lambda: ZOSGD([torch.ones(2, dtype=torch.long)]), TypeError, r"'params' argument of ZOSGD must be floating-point"),
        Bad("closure not callable", lambda: mk().step(None), TypeError, r"'closure' argument of ZOSGD\.step must be a callable"),
        Bad("closure non-scalar", lambda: mk().step(lambda: torch.ones(2)), ValueError, r"'closure' argument of ZOSGD\.step must be a callable returning a 0-dim loss tensor\. Got \(2,\)"),
    ]
    return ([OptimInfo("ZOSGD-zo_sgd-fd-gaussian", _problem, make, _step, bad=bad, stochastic=True, nonfinite=nonfinite,
                       nonfinite_exc=(NotConvergedWarning, r"ZOSGD step 0 skipped: the closure returned a non-finite loss")),
             OptimInfo("ZOSGD-zo_sgd-jvp-rademacher", _model_problem, make_jvp, _model_step, stochastic=True)],
            [])
