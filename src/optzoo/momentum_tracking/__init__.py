"""momentum_tracking: when momentum hurts under drift, measured against exact theory.

Paper 09: S. Sahu, C. J. Hogan, M. T. Wells, "On the Provable Suboptimality of Momentum SGD
in Nonstationary Stochastic Optimization", ICML 2026, arXiv 2601.12238. Fidelity:
**reconstructed** (the theorems were not available; the exact quadratic theory is our own,
see ``docs/papers/momentum_tracking.md``).

* :mod:`.theory`: exact steady-state and finite-time tracking error of SGD, heavy-ball and
  Nesterov (torch, EMA and Nesterov parametrisations), its transient / noise / drift parts,
  the worst-case drift gain, the Kalman lower bound, the regime boundary and :func:`recommend`.
* :mod:`.regimes`: the helps/hurts boundary, :func:`recommend`, the paper-bound stub.
* :mod:`.simulator`: :class:`DriftingQuadratic`, the vectorised :func:`simulate` and the
  ``torch.optim``-driven :func:`run_tracking`.
"""

from . import theory
from .regimes import (
                      PhaseDiagram,
                      Recommendation,
                      momentum_advantage,
                      recommend,
                      regime_boundary,
)
from .simulator import DriftingQuadratic, TrackingHistory, run_tracking, simulate
from .theory import (
                      Decomposition,
                      MSEParts,
                      adversarial_drift,
                      closed_form_mse,
                      constant_drift_lag,
                      curvature_spectrum,
                      impulse_response,
                      kalman_floor,
                      stable_lr_max,
                      stationary_mse,
                      tracking_error,
                      tuned_mse,
                      worst_case_drift_gain,
)

__all__ = [
    "theory",
    "DriftingQuadratic",
    "TrackingHistory",
    "simulate",
    "run_tracking",
    "MSEParts",
    "Decomposition",
    "PhaseDiagram",
    "Recommendation",
    "stable_lr_max",
    "stationary_mse",
    "closed_form_mse",
    "tracking_error",
    "constant_drift_lag",
    "impulse_response",
    "worst_case_drift_gain",
    "adversarial_drift",
    "kalman_floor",
    "tuned_mse",
    "momentum_advantage",
    "regime_boundary",
    "curvature_spectrum",
    "recommend",
]
