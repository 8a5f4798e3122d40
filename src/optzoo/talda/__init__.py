"""TALDA-R: Lyapunov-designed descent-ascent for two-sided PL minimax problems (reconstructed).

Paper: "From Lyapunov Analysis to Algorithm Design in two-sided PL Minimax Optimization",
ICML 2026 (poster 63719; no arXiv id, no official code found). Fidelity: **reconstructed**
from the abstract only. TALDA-R (Tri-Action Lyapunov Descent Ascent, reconstructed) is OUR
construction, not the paper's algorithm: the gradient-only surrogate W, the path-dependent
surrogate S, the three actions, the step rule ``eta = [1 - K rho]_+ / M``, the certified rate
and every default are INFERRED (see ``docs/papers/talda.md``).

>>> import torch
>>> from optzoo.talda import TwoSidedPL, talda_solve
>>> from optzoo.talda.problems import yang2d
>>> p = yang2d()
>>> res = talda_solve(p.torch_f, torch.tensor([1.5], dtype=torch.float64),
...                   torch.tensor([-1.0], dtype=torch.float64), constants=p.constants)
>>> res.status.value, res.nfev == res.nit + 1
('converged', True)
>>> S = res.history["surrogate"]
>>> all(b <= a for a, b in zip(S, S[1:]))
True
"""

from optzoo.talda._oracle import NotConvergedWarning
from optzoo.talda.baselines import MINIMAX_METHODS, minimax_solve, theory_steps
from optzoo.talda.constants import (
    TwoSidedPL,
    agda_theory_rate,
    certified_rate,
    lyapunov_terms,
)
from optzoo.talda.talda import talda_solve, talda_update

__all__ = [
    "TwoSidedPL",
    "certified_rate",
    "lyapunov_terms",
    "agda_theory_rate",
    "talda_update",
    "talda_solve",
    "minimax_solve",
    "theory_steps",
    "MINIMAX_METHODS",
    "TALDA",
    "GDA",
    "AGDA",
    "ExtraGradient",
    "OptimisticGDA",
    "NotConvergedWarning",
]


_OPTIMIZERS = ("TALDA", "GDA", "AGDA", "ExtraGradient", "OptimisticGDA")


def __getattr__(name):
    # the optimizers subclass torch.optim.Optimizer: importing them on first use keeps
    # `import optzoo.talda` (and the numpy reproduction) free of the torch import
    if name in _OPTIMIZERS:
        from optzoo.talda import optim

        return getattr(optim, name)
    raise AttributeError(f"module 'optzoo.talda' has no attribute {name!r}")
