"""Solver-call counting, the shared training loop with our losses and PyEPO's, divergence."""

import warnings

import numpy as np
import pyepo
import pytest
import torch

from optzoo import NotConvergedWarning, Status
from optzoo.dfl import (
    FeasibleSetModel,
    SolverCallError,
    count_solver_calls,
    enumerate_grid_paths,
    precompute,
    train_predictor,
)
from optzoo.dfl.experimental import DirectionalLoss, PoolSoftminLoss


@pytest.fixture(scope="module")
def sp():
    m = FeasibleSetModel(enumerate_grid_paths((3, 3)))
    x, c = pyepo.data.shortestpath.genData(96, 4, (3, 3), deg=4, noise_width=0.5, seed=7)
    train, _, _ = precompute(m, x[:64], c[:64])
    test, _, _ = precompute(m, x[64:], c[64:])
    return m, train, test


def test_counter_counts_and_forbid_raises(sp):
    m, train, _ = sp
    with count_solver_calls(m) as n:
        for row in train.costs[:5]:
            m.setObj(row)
            m.solve()
    assert n.calls == 5
    with pytest.raises(SolverCallError, match="solver-free"), count_solver_calls(m, forbid=True):
        m.solve()
    assert "solve" not in m.__dict__  # the wrapper is removed afterwards


@pytest.mark.parametrize("make,calls_per_instance", [
    (lambda m, ds: DirectionalLoss(m), 0),
    (lambda m, ds: PoolSoftminLoss(m, dataset=ds), 0),
    (lambda m, ds: torch.nn.MSELoss(), 0),
    (lambda m, ds: pyepo.func.SPOPlus(m), 1),
    (lambda m, ds: pyepo.func.perturbedFenchelYoung(m, n_samples=2), 2),
])
def test_loop_solver_calls_are_counted(sp, make, calls_per_instance):
    m, train, test = sp
    res = train_predictor(torch.nn.Linear(4, 12), make(m, train), train, optmodel=m, epochs=2,
                          lr=1e-2, batch_size=16, seed=0, test_data=test,
                          solver_free=calls_per_instance == 0)
    assert res.status is Status.BUDGET and res.success
    assert res.nfev == calls_per_instance * 2 * len(train)
    assert res.nit == 2 * 4 and np.isfinite(res.fun) and res.fun >= 0


def test_solver_free_flag_refuses_a_solver_based_loss(sp):
    m, train, _ = sp
    with pytest.raises(SolverCallError):
        train_predictor(torch.nn.Linear(4, 12), pyepo.func.SPOPlus(m), train, optmodel=m,
                        epochs=1, solver_free=True)


def test_training_lowers_regret_and_same_seed_same_model(sp):
    m, train, test = sp
    torch.manual_seed(0)
    base = torch.nn.Linear(4, 12)
    state = {k: v.clone() for k, v in base.state_dict().items()}
    outs = []
    for _ in range(2):
        net = torch.nn.Linear(4, 12)
        net.load_state_dict(state)
        outs.append(train_predictor(net, DirectionalLoss(m), train, optmodel=m, epochs=15,
                                    lr=5e-2, seed=3, test_data=test))
    p0, p1 = (torch.nn.utils.parameters_to_vector(r.x.parameters()) for r in outs)
    assert torch.equal(p0, p1)
    untrained = torch.nn.Linear(4, 12)
    untrained.load_state_dict(state)
    loader = torch.utils.data.DataLoader(test, batch_size=64)
    assert outs[0].fun < pyepo.metric.regret(untrained, m, loader)


def test_divergence_is_a_status_and_a_warning(sp):
    m, train, _ = sp
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = train_predictor(torch.nn.Linear(4, 12), torch.nn.MSELoss(), train, optmodel=m,
                              epochs=3, lr=1e12)
    assert res.status is Status.DIVERGED and not res.success and "diverge" in res.message
    assert any(issubclass(x.category, NotConvergedWarning) for x in w)


def test_degree_one_large_n_regret_is_small_for_mse_and_A():
    """Spec 4.8 (excess-risk sanity): well specified (deg 1) and plenty of data."""
    m = FeasibleSetModel(enumerate_grid_paths((3, 3)))
    x, c = pyepo.data.shortestpath.genData(1200, 4, (3, 3), deg=1, noise_width=0.0, seed=8)
    train, _, _ = precompute(m, x[:1000], c[:1000])
    test, _, _ = precompute(m, x[1000:], c[1000:])
    for loss in (torch.nn.MSELoss(), DirectionalLoss(m)):
        torch.manual_seed(1)
        res = train_predictor(torch.nn.Linear(4, 12), loss, train, optmodel=m, epochs=10,
                              lr=2e-2, seed=0, test_data=test)
        assert res.fun < 0.03, (type(loss).__name__, res.fun)
