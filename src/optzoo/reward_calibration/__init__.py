"""Reward calibration: disentangled preference optimisation (suppress the loser, keep the winner).

Paper: Chen et al., "Towards Disentangled Preference Optimization Dynamics: Suppress the Loser,
Preserve the Winner", ICML 2026, arXiv 2604.18239. Fidelity: official-code.

* :func:`incentives`, :func:`preference_loss`, :class:`PreferenceLoss`: the DPO family
  (DPO, IPO, SimPO, CPO, SLiC, BCE) as incentive pairs ``(d_w, d_l)``;
* :func:`disentanglement_band`, :func:`band_edges`, :func:`first_order_change`: the band
  diagnostic; :class:`RewardCalibrator`: the calibration wrapper (``calibrator=`` argument);
* :class:`RCDPOTrainer`, :class:`RCDPOConfig`: the TRL adapter (imports ``trl`` on first use);
* :mod:`optzoo.reward_calibration.testbed`: the exact log-linear testbed.
"""

from optzoo.reward_calibration.calibration import (
    Band,
    RewardCalibrator,
    band_edges,
    disentanglement_band,
    first_order_change,
)
from optzoo.reward_calibration.losses import (
    LOSS_TYPES,
    PreferenceLoss,
    incentives,
    pairwise_loss,
    preference_loss,
)
from optzoo.reward_calibration.testbed import LogLinearPolicy

__all__ = [
    "LOSS_TYPES",
    "Band",
    "LogLinearPolicy",
    "PreferenceLoss",
    "RCDPOConfig",
    "RCDPOTrainer",
    "RewardCalibrator",
    "band_edges",
    "disentanglement_band",
    "first_order_change",
    "incentives",
    "pairwise_loss",
    "preference_loss",
]

_LAZY = {"RCDPOConfig", "RCDPOTrainer"}


def __getattr__(name):
    # The TRL adapter imports trl/transformers: resolved on first use to keep this import light.
    if name in _LAZY:
        from optzoo.reward_calibration import trl_adapter

        return getattr(trl_adapter, name)
    raise AttributeError(f"module 'optzoo.reward_calibration' has no attribute {name!r}")
