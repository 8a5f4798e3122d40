"""dfl rows of the common solver table (tests/test_common.py).

``train_predictor`` is the room's one solver-like function (it returns ``optzoo.Result``).
Its ``x`` is the trained ``nn.Module``; the rows compare runs through the flattened
parameters, so ``run`` returns the same Result with ``x`` replaced by that vector.
"""


def _data(n=48, nan=False):
    import pyepo

    from optzoo.dfl import FeasibleSetModel, enumerate_grid_paths, precompute

    m = FeasibleSetModel(enumerate_grid_paths((2, 3)))
    x, c = pyepo.data.shortestpath.genData(n, 3, (2, 3), deg=4, noise_width=0.5, seed=11)
    ds, _, _ = precompute(m, x, c)
    if nan:
        ds.costs = ds.costs.clone()
        ds.costs[0, 0] = float("nan")
    return m, ds


def _train(loss="A", seed=0, **kw):
    import torch

    from optzoo.dfl import train_predictor
    from optzoo.dfl.experimental import DirectionalLoss, PoolSoftminLoss

    m, ds = _data()
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 7)
    fn = DirectionalLoss(m) if loss == "A" else PoolSoftminLoss(m, dataset=ds)
    res = train_predictor(net, fn, ds, optmodel=m, epochs=kw.pop("epochs", 2), seed=seed,
                          test_data=ds, **kw)
    res.x = torch.nn.utils.parameters_to_vector(res.x.parameters()).detach()
    return res


def rows(Bad, SolverInfo, OptimInfo):
    def bad_for(loss):
        def call(**kw):
            return lambda: _train(loss, **kw)

        return [
            Bad("epochs=0", call(epochs=0), ValueError,
                r"'epochs' argument of train_predictor must be an int in \[1, inf\]\. Got 0"),
            Bad("lr<=0", call(lr=0.0), ValueError, r"'lr' argument of train_predictor"),
            Bad("batch_size float", call(batch_size=2.5), TypeError,
                r"'batch_size' argument of train_predictor must be an int"),
            Bad("seed<0", call(seed=-1), ValueError, r"'seed' argument of train_predictor"),
        ]

    def nonfinite_call():
        import torch

        from optzoo.dfl import train_predictor
        from optzoo.dfl.experimental import DirectionalLoss

        m, ds = _data(nan=True)
        train_predictor(torch.nn.Linear(3, 7), DirectionalLoss(m), ds, optmodel=m)

    solvers = [
        SolverInfo(f"dfl_train_predictor[{k}]", lambda k=k, **kw: _train(k, **kw), bad=bad_for(k),
                   seed_kw="seed", stochastic=True,
                   nonfinite=Bad("nan costs", nonfinite_call, ValueError,
                                 r"'train_data' argument of train_predictor must contain only finite"),
                   diverge={"lr": 1e12})
        for k in ("A", "B")
    ]
    return [], solvers
