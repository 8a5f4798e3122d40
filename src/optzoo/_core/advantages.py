"""The group-relative (GRPO) advantage, one implementation for every room that uses it.

GRPO scores each of the :math:`G` completions of a prompt against its own group:

.. math:: A_i = \\frac{r_i - \\operatorname{mean}_g r}{\\operatorname{std}_g r + \\varepsilon}.

The formula leaves two choices open, and the libraries differ on both, so a caller states
them (there is no default):

``std="unbiased"``: the Bessel-corrected standard deviation (divide by :math:`G-1`).
    TRL 1.16's ``GRPOTrainer`` (``trl/trainer/grpo_trainer.py`` line 2770,
    ``nanstd(rewards.view(-1, num_generations), dim=1)``; the correction ``count / (count - 1)``
    is ``trl/trainer/utils.py`` lines 1041-1043) with ``eps=1e-4`` (``grpo_trainer.py`` line 2787,
    the same in ``normalize_then_sum``, line 2794); verl's ``compute_grpo_outcome_advantage``
    (``torch.std``) with ``eps=1e-6``.
``std="population"``: divide by :math:`G` (NumPy's default, ``ddof=0``).

For a group of :math:`G` the population scale is :math:`\\sqrt{(G-1)/G}` times the unbiased
one, so the two give advantages that differ by that constant factor (0.935 at G = 8), plus
the effect of ``eps``. A group of one has no unbiased spread (NaN).
"""

from __future__ import annotations

from typing import Any

from optzoo._core.validation import check_choice, check_real

__all__ = ["STD_CONVENTIONS", "group_advantages"]

STD_CONVENTIONS = ("population", "unbiased")


def group_advantages(rewards: Any, *, std: str, eps: float, dim: int = 1) -> Any:
    """GRPO advantages :math:`(r - \\mathrm{mean}_g r) / (\\mathrm{std}_g r + \\varepsilon)`,
    standardised along ``dim`` (the group axis: ``[B, G]`` or ``[B, G, m]`` by default).

    ``rewards``: a NumPy array or a torch tensor; the result is of the same kind, dtype and
    shape. ``std``: ``"unbiased"`` (TRL, verl) or ``"population"`` (see the module docstring).
    ``eps``: added to the standard deviation (TRL 1e-4, verl 1e-6).

    >>> import numpy as np
    >>> r = np.array([[1.0, 3.0], [5.0, 5.0]])
    >>> group_advantages(r, std="population", eps=1e-6).round(3).tolist()
    [[-1.0, 1.0], [0.0, 0.0]]
    >>> group_advantages(r, std="unbiased", eps=1e-6).round(3).tolist()
    [[-0.707, 0.707], [0.0, 0.0]]
    """
    owner = "group_advantages"
    check_choice("std", std, STD_CONVENTIONS, owner=owner)
    eps = check_real("eps", eps, owner=owner, low=0.0)
    ddof = 1 if std == "unbiased" else 0
    if hasattr(rewards, "detach") and hasattr(rewards, "std"):  # torch, without importing it
        spread = rewards.std(dim, keepdim=True, correction=ddof)
        return (rewards - rewards.mean(dim, keepdim=True)) / (spread + eps)
    import numpy as np

    r = np.asarray(rewards)
    return (r - r.mean(dim, keepdims=True)) / (r.std(dim, keepdims=True, ddof=ddof) + eps)
