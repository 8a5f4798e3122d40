"""divide_and_learn runs on an evaluation budget: spending it is Status.BUDGET (success)."""

from optzoo import Status
from optzoo.mo_bandit import divide_and_learn
from optzoo.mo_bandit.problems import bi_knapsack


def test_divide_and_learn_budget_used_is_success():
    res = divide_and_learn(bi_knapsack(12, capacity=3.0, seed=0), 150, n_weight_vectors=3, seed=4)
    assert res.nfev == 150 and res.status is Status.BUDGET and res.success
