"""Zero-order optimization under Markovian noise with randomized batching (paper 19).

Prokhorov, Chebykin, Gasnikov, Beznosikov, "Gradient-Free Approaches is a Key to an
Efficient Interaction with Markovian Stochasticity", ICML 2026, arXiv 2601.01160.
Fidelity: reconstructed (abstract only); see ``docs/papers/markov_zo.md``.

>>> from optzoo.markov_zo import StickyChain
>>> StickyChain.with_mixing_time([-1.0, 1.0], 10).mixing_time
10

``MarkovZOSGD`` (torch) is loaded on first access, so importing this package stays light.
"""

from optzoo.markov_zo.baselines import markov_sgd_minimize, spsa_minimize
from optzoo.markov_zo.chains import AR1Chain, FiniteChain, StickyChain
from optzoo.markov_zo.oracle import MarkovOracle
from optzoo.markov_zo.theory import batch_error, crossover_tau, mlmc_error, predicted_ratio, v_b
from optzoo.markov_zo.zo import (
    estimate_smoothness,
    expected_batch_cost,
    markov_zo_minimize,
    mlmc_weights,
    one_point_estimates,
    sphere_directions,
    strongly_convex_lr,
    two_point_estimates,
)

__all__ = [
    "AR1Chain",
    "FiniteChain",
    "MarkovOracle",
    "MarkovZOSGD",
    "StickyChain",
    "batch_error",
    "crossover_tau",
    "estimate_smoothness",
    "expected_batch_cost",
    "markov_sgd_minimize",
    "markov_zo_minimize",
    "mlmc_error",
    "mlmc_weights",
    "one_point_estimates",
    "predicted_ratio",
    "sphere_directions",
    "spsa_minimize",
    "strongly_convex_lr",
    "two_point_estimates",
    "v_b",
]


def __getattr__(name):
    if name == "MarkovZOSGD":
        from optzoo.markov_zo.optim import MarkovZOSGD

        return MarkovZOSGD
    raise AttributeError(f"module 'optzoo.markov_zo' has no attribute {name!r}")
