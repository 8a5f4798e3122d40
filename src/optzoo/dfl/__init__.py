"""dfl: solver-free training for predict-then-optimize (ICML 2026, arXiv 2606.19587).

Fidelity: **reconstructed**. Only the abstract is public; the paper's loss is unknown. The two
solver-free losses shipped here are OUR candidates, derived from the abstract's stated
properties (no solver call in training, Fisher consistency), and live in
:mod:`optzoo.dfl.experimental`:

* candidate A, :class:`~optzoo.dfl.experimental.DirectionalLoss`:
  :math:`-c^\\top\\hat c/\\lVert\\hat c\\rVert` (Fisher consistent, needs only the costs);
* candidate B, :class:`~optzoo.dfl.experimental.PoolSoftminLoss`: a softmin over the
  pre-computed pool of optimal solutions (a smoothed ``contrastiveMAP``).

Neither is "the paper's loss". The rest of the package is exact and independent of that
question: licence-free PyEPO models on SciPy's HiGHS (:class:`LinearProgramModel`, built from
matrices or, with :meth:`LinearProgramModel.from_scipy`, from a scipy ``milp`` problem's
``LinearConstraint`` / ``Bounds`` / ``integrality``; :func:`shortest_path_model`,
:func:`knapsack_model`; PyEPO's TSP and portfolio problems as :func:`tsp_model`, an exact
MILP on HiGHS, and :func:`portfolio_model`, an exact KKT solve of the Markowitz QCQP), an
exact enumeration oracle
(:class:`FeasibleSetModel`), solver-call counting (:func:`count_solver_calls`), the one-off
pre-computation (:func:`precompute`), regret (:func:`decision_regret`, and PyEPO's
``pyepo.metric.regret`` in :func:`train_predictor`) and one training loop for every loss.

The candidates are imported from ``optzoo.dfl.experimental`` on purpose: nothing under the
paper's name until its equations are known.

Example (shortest path, PyEPO data, candidate A; the block refuses any solver call)::

    import pyepo, torch
    from optzoo.dfl import count_solver_calls, precompute, shortest_path_model, train_predictor
    from optzoo.dfl.experimental import DirectionalLoss
    optmodel = shortest_path_model((5, 5))                       # HiGHS, no licence
    x, c = pyepo.data.shortestpath.genData(1000, 5, (5, 5), deg=4, noise_width=0.5, seed=1)
    train, calls, cpu = precompute(optmodel, x[:800], c[:800])   # one solve per instance
    test, _, _ = precompute(optmodel, x[800:], c[800:])
    res = train_predictor(torch.nn.Linear(5, 40), DirectionalLoss(optmodel), train,
                          optmodel=optmodel, test_data=test, solver_free=True)
    res.fun, res.nfev                                            # test regret, 0 solver calls
"""

try:
    import pyepo  # noqa: F401  (every model here is a PyEPO optModel)
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("optzoo.dfl is built on PyEPO's models and losses: pip install "
                      "'optzoo[dfl]' (or 'pyepo>=0.3')") from exc

from optzoo.dfl.models import (
    FeasibleSetModel,
    LinearProgramModel,
    PortfolioModel,
    TSPModel,
    enumerate_grid_paths,
    enumerate_knapsack,
    enumerate_tsp_tours,
    grid_arcs,
    knapsack_model,
    portfolio_model,
    pyepo_model,
    shortest_path_model,
    tsp_model,
    tsp_tour,
)
from optzoo.dfl.training import (
    SolverCallCounter,
    SolverCallError,
    count_solver_calls,
    decision_regret,
    precompute,
    train_predictor,
)

__all__ = [
    "FeasibleSetModel",
    "LinearProgramModel",
    "PortfolioModel",
    "SolverCallCounter",
    "SolverCallError",
    "TSPModel",
    "count_solver_calls",
    "decision_regret",
    "enumerate_grid_paths",
    "enumerate_knapsack",
    "enumerate_tsp_tours",
    "grid_arcs",
    "knapsack_model",
    "portfolio_model",
    "precompute",
    "pyepo_model",
    "shortest_path_model",
    "train_predictor",
    "tsp_model",
    "tsp_tour",
]
