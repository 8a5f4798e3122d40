"""DP-C4 (reconstructed): differentially private optimization without clipping bias.

Public API: the optimizers :class:`DPC4` and :class:`DPSGD` (``torch.optim.Optimizer``
subclasses in Opacus' shape: they privatise per-sample gradients into ``p.grad`` for a wrapped
torch optimizer, SGD by default, and checkpoint their DP state and ledger), their pure cores :func:`dpc4_update` and
:func:`dpsgd_update`, the public threshold schedules, the privacy ledger and calibration.
Fidelity: the update rule is optzoo's reconstruction (only the abstracts are public); the
privacy accounting is exact. See ``docs/papers/dpc4.md``.
"""

from optzoo.dpc4.accounting import (
    NoiseSchedule,
    PrivacyBudgetExceeded,
    PrivacyLedger,
    calibrate,
    gaussian_dp_epsilon,
    rdp_epsilon,
)
from optzoo.dpc4.core import (
    ConstantClip,
    DPC4State,
    ShiftedDecay,
    clip_rows,
    dpc4_init,
    dpc4_update,
    dpsgd_update,
)
from optzoo.dpc4.optim import DPC4, DPSGD, PoissonLoader, per_sample_grads

__all__ = [
    "DPC4",
    "DPSGD",
    "ConstantClip",
    "DPC4State",
    "NoiseSchedule",
    "PoissonLoader",
    "PrivacyBudgetExceeded",
    "PrivacyLedger",
    "ShiftedDecay",
    "calibrate",
    "clip_rows",
    "dpc4_init",
    "dpc4_update",
    "dpsgd_update",
    "gaussian_dp_epsilon",
    "per_sample_grads",
    "rdp_epsilon",
]
