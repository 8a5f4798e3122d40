"""Bad input raises at once, naming the argument, the rule and the value."""

import numpy as np
import pyepo
import pytest
import torch

from optzoo.dfl import (
    FeasibleSetModel,
    LinearProgramModel,
    decision_regret,
    enumerate_grid_paths,
    knapsack_model,
    precompute,
    shortest_path_model,
    train_predictor,
)
from optzoo.dfl.experimental import (
    DirectionalLoss,
    PoolSoftminLoss,
    directional_loss,
    pool_softmin_loss,
)

SP = FeasibleSetModel(enumerate_grid_paths((2, 3)))
KS = FeasibleSetModel(np.eye(3), sense="max")


def _ds(m=SP, n=8):
    x = np.random.default_rng(0).standard_normal((n, 2))
    c = np.random.default_rng(1).uniform(0.5, 1.5, (n, m.num_cost))
    return precompute(m, x, c)[0]


CASES = [
    ("shape mismatch", lambda: directional_loss(torch.ones(4, 7), torch.ones(4, 6)), ValueError,
     r"'true_cost' argument of directional_loss must be of shape \(batch, 7\)"),
    ("batch mismatch", lambda: directional_loss(torch.ones(4, 7), torch.ones(3, 7)), ValueError,
     r"'true_cost' argument of directional_loss must be of shape \(4, num_cost\)"),
    ("width vs model", lambda: DirectionalLoss(SP)(torch.ones(2, 5), torch.ones(2, 5)), ValueError,
     r"'pred_cost' argument of directional_loss must be of shape \(batch, 7\)"),
    ("nan costs", lambda: directional_loss(torch.ones(2, 7), torch.full((2, 7), float("nan"))),
     ValueError, r"'true_cost' argument of directional_loss must contain only finite values"),
    ("integer tensor", lambda: directional_loss(torch.ones(2, 7, dtype=torch.long), torch.ones(2, 7)),
     TypeError, r"'pred_cost' argument of directional_loss must be a floating-point tensor"),
    ("not a tensor", lambda: directional_loss([[1.0]], torch.ones(1, 1)), TypeError,
     r"'pred_cost' argument of directional_loss must be a torch.Tensor"),
    ("empty batch", lambda: directional_loss(torch.ones(0, 7), torch.ones(0, 7)), ValueError,
     r"'pred_cost' argument of directional_loss must be a non-empty tensor"),
    ("reduction", lambda: directional_loss(torch.ones(1, 7), torch.ones(1, 7), reduction="max"),
     ValueError, r"'reduction' argument of directional_loss must be one of"),
    ("sense mismatch A", lambda: DirectionalLoss(SP, sense="max"), ValueError,
     r"'sense' argument of DirectionalLoss must be the sense of the optmodel \('min'\). Got 'max'"),
    ("sense mismatch B", lambda: PoolSoftminLoss(KS, pool=torch.eye(3), sense="min"), ValueError,
     r"'sense' argument of PoolSoftminLoss must be the sense of the optmodel \('max'\)"),
    ("tau", lambda: PoolSoftminLoss(SP, pool=torch.ones(1, 7), tau=0.0), ValueError,
     r"'tau' argument of PoolSoftminLoss must be a finite real number in \(0, inf\)"),
    ("pool and dataset", lambda: PoolSoftminLoss(SP), ValueError,
     r"'dataset' argument of PoolSoftminLoss must be given, or else 'pool'"),
    ("pool width", lambda: pool_softmin_loss(torch.ones(2, 7), torch.ones(2, 7), torch.ones(3, 6)),
     ValueError, r"'pool' argument of pool_softmin_loss must be of shape \(batch, 7\)"),
    ("empty dataset", lambda: precompute(SP, np.zeros((0, 2)), np.zeros((0, 7))), ValueError,
     r"'costs' argument of precompute must be a non-empty set of cost vectors"),
    ("nan in precompute", lambda: precompute(SP, np.zeros((1, 2)), np.full((1, 7), np.nan)),
     ValueError, r"'costs' argument of precompute must contain only finite values"),
    ("costs width", lambda: precompute(SP, np.zeros((2, 2)), np.ones((2, 5))), ValueError,
     r"'costs' argument of precompute must be of shape \(n, 7\)"),
    ("regret shapes", lambda: decision_regret(np.ones((2, 7)), np.ones((3, 7)), np.ones(3), SP),
     ValueError, r"'pred_cost' argument of decision_regret must be a non-empty \(n, d\) array"),
    ("regret of an all-zero optimum (trial D18)", lambda: decision_regret(np.ones((3, 7)), np.ones((3, 7)), np.zeros(3), SP),
     ValueError, r"'true_obj' argument of decision_regret must be not all zero when reduction='normalized'"),
    ("lp sense", lambda: LinearProgramModel(2, sense="maximize"), ValueError,
     r"'sense' argument of LinearProgramModel must be one of 'min', 'max'"),
    ("lp A width", lambda: LinearProgramModel(2, A_ub=[[1.0, 1.0, 1.0]], b_ub=[1.0]), ValueError,
     r"'A_ub' argument of LinearProgramModel must be a matrix with 2 columns"),
    ("lp num_vars", lambda: LinearProgramModel(0), ValueError,
     r"'num_vars' argument of LinearProgramModel must be an int in \[1, inf\]"),
    ("grid", lambda: shortest_path_model((5,)), ValueError, r"'grid' argument of shortest_path_model"),
    ("knapsack weights", lambda: knapsack_model([1.0, 2.0], 3.0), ValueError,
     r"'weights' argument of knapsack_model"),
    ("knapsack capacity < 0 (trial 2)", lambda: knapsack_model([[1.0, 2.0]], [-1.0]), ValueError,
     r"'capacity' argument of knapsack_model must be non-negative .*Got \[-1\.0\]"),
    ("knapsack capacity length", lambda: knapsack_model([[1.0, 2.0]], [1.0, 2.0, 3.0]), ValueError,
     r"'capacity' argument of knapsack_model must be a number or an array of shape \(1,\)"),
    ("setObj nan", lambda: SP.setObj(np.full(7, np.nan)), ValueError,
     r"'c' argument of FeasibleSetModel.setObj must contain only finite values"),
]


@pytest.mark.parametrize("call,exc,match", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_train_predictor_bad_inputs():
    ds = _ds()
    net = torch.nn.Linear(2, 7)
    with pytest.raises(TypeError, match=r"'train_data' argument of train_predictor must be a pyepo optDataset"):
        train_predictor(net, DirectionalLoss(SP), [1, 2], optmodel=SP)
    with pytest.raises(ValueError, match=r"'epochs' argument of train_predictor must be an int in \[1, inf\]"):
        train_predictor(net, DirectionalLoss(SP), ds, optmodel=SP, epochs=0)
    with pytest.raises(ValueError, match=r"'lr' argument of train_predictor"):
        train_predictor(net, DirectionalLoss(SP), ds, optmodel=SP, lr=-1.0)
    with pytest.raises(ValueError, match=r"'loss_fn' argument of train_predictor must be a loss built"):
        km = FeasibleSetModel(np.eye(7), sense="max")
        train_predictor(net, DirectionalLoss(km), ds, optmodel=SP)
    with pytest.raises(ValueError, match=r"'train_data' argument of train_predictor must be a dataset with costs of width"):
        train_predictor(torch.nn.Linear(2, 3), DirectionalLoss(KS), ds, optmodel=KS)
    bad = _ds()
    bad.costs = bad.costs.clone()
    bad.costs[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"'train_data' argument of train_predictor must contain only finite"):
        train_predictor(net, DirectionalLoss(SP), bad, optmodel=SP)
    empty = _ds()
    empty.feats, empty.costs, empty.sols, empty.objs = (t[:0] for t in (empty.feats, empty.costs,
                                                                         empty.sols, empty.objs))
    with pytest.raises(ValueError, match=r"'train_data' argument of train_predictor must be a non-empty dataset"):
        train_predictor(net, DirectionalLoss(SP), empty, optmodel=SP)
    # trial 2, item 8: a loss returning None, and a plain torch loss fed the wrong width
    with pytest.raises(TypeError, match=r"'loss_fn' argument of train_predictor must be a callable "
                                        r"returning a torch tensor \(the loss\)\. Got 'NoneType'"):
        train_predictor(net, lambda pred_cost, true_cost: None, ds, optmodel=SP)
    with pytest.raises(ValueError, match=r"'model' argument of train_predictor must be a predictor of "
                                         r"costs, output shape \(batch, 7\)\. Got \(8, 3\)"):
        train_predictor(torch.nn.Linear(2, 3), torch.nn.MSELoss(), ds, optmodel=SP, batch_size=8)


def test_pyepo_modules_accept_our_models():
    ds = _ds()
    spo = pyepo.func.SPOPlus(SP)
    loss = spo(torch.ones(8, 7), ds.costs, ds.sols, ds.objs)
    assert torch.isfinite(loss)
