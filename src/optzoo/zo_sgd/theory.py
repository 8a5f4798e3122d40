"""Closed forms of the ZO kernel view (ours, derived; the paper's own derivations were not
available): second moments of :math:`K_{ZO}`, the Johnson-Lindenstrauss fidelity bound as a
function of P and of the number of tangent vectors (N V), the parameter-space laws that make
classical ZO rates scale with d, and the one-step function-space prediction.

For tangent vectors a, b and :math:`K_{ZO}[a,b]=\\frac1P\\sum_p (a^\\top u_p)(b^\\top u_p)`:

* Gaussian: :math:`\\mathrm{Var}=((a\\cdot b)^2+\\|a\\|^2\\|b\\|^2)/P`;
* Rademacher: :math:`\\mathrm{Var}=(\\|a\\|^2\\|b\\|^2+(a\\cdot b)^2-2\\sum_k a_k^2b_k^2)/P`;

so for a Gram kernel the Gaussian mean squared relative Frobenius error is exactly
:math:`(1+r)/P` with the effective rank :math:`r=\\mathrm{tr}(K)^2/\\|K\\|_F^2\\le NV`: it
depends on P and on the output size through r, and on d not at all.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from optzoo._core.validation import check_choice, check_int, check_real, fail
from optzoo.zo_sgd.optim import DISTRIBUTIONS

__all__ = ["effective_rank", "expected_gradient_cosine", "expected_relative_error",
           "gradient_error", "jl_entry_bound", "jl_perturbations_needed", "one_step_prediction",
           "zo_entk_variance"]


def _sq(K, name, owner):
    K = torch.as_tensor(K, dtype=torch.float64)
    if K.dim() != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        fail(name, owner, "a non-empty square kernel matrix", tuple(K.shape))
    return K


def effective_rank(K) -> float:
    """:math:`\\mathrm{tr}(K)^2/\\|K\\|_F^2` of a Gram kernel (between 1 and its size)."""
    K = _sq(K, "K", "effective_rank")
    return float(torch.trace(K) ** 2 / (K ** 2).sum())


def zo_entk_variance(K_ou, diag_o, diag_u, num_perturbations: int, *, distribution: str = "gaussian",
                     fourth=None) -> torch.Tensor:
    """Per-entry variance of :math:`K_{ZO}` given :math:`K_{ou}`, the squared tangent norms
    ``diag_o``/``diag_u`` and P. Rademacher needs ``fourth[a,b]=\\sum_k a_k^2 b_k^2``; without
    it the Gaussian value is returned, an upper bound for Rademacher."""
    owner = "zo_entk_variance"
    P = check_int("num_perturbations", num_perturbations, owner=owner, low=1)
    check_choice("distribution", distribution, DISTRIBUTIONS, owner=owner)
    K = torch.as_tensor(K_ou, dtype=torch.float64)
    do = torch.as_tensor(diag_o, dtype=torch.float64).reshape(-1, 1)
    du = torch.as_tensor(diag_u, dtype=torch.float64).reshape(1, -1)
    var = (K ** 2 + do * du) / P
    if distribution == "rademacher" and fourth is not None:
        var = var - 2.0 * torch.as_tensor(fourth, dtype=torch.float64) / P
    return var


def expected_relative_error(K, num_perturbations: int) -> float:
    """Root mean squared relative Frobenius error :math:`\\sqrt{(1+r)/P}` of the Gaussian
    :math:`K_{ZO}` of a Gram kernel ``K`` (r its effective rank). Exact for Gaussian
    directions; an upper bound for Rademacher ones."""
    P = check_int("num_perturbations", num_perturbations, owner="expected_relative_error", low=1)
    return math.sqrt((1.0 + effective_rank(K)) / P)


def _fail_prob(eps, P, n):
    # union over n^2 norm-preservation events (polarisation of every normalised pair, and the
    # diagonal), each failing with probability <= 2 exp(-P (eps^2/2 - eps^3/3) / 2)
    return 2.0 * n * n * np.exp(-P * (eps ** 2 / 2.0 - eps ** 3 / 3.0) / 2.0)


def jl_entry_bound(num_perturbations: int, n_vectors: int, *, delta: float = 0.05) -> float:
    """JL fidelity bound: with probability at least ``1 - delta`` every entry obeys
    :math:`|K_{ZO}[a,b]-K[a,b]|\\le\\epsilon\\|a\\|\\|b\\|` over ``n_vectors`` tangent vectors
    (N V of them), for the returned :math:`\\epsilon` (``inf`` when P is too small for any
    :math:`\\epsilon<1`). Gaussian (Dasgupta-Gupta) or Rademacher (Achlioptas) directions. The
    bound involves P and the number of vectors, never d.

    >>> round(jl_entry_bound(256, 16), 3) < round(jl_entry_bound(64, 16), 3)
    True
    """
    owner = "jl_entry_bound"
    P = check_int("num_perturbations", num_perturbations, owner=owner, low=1)
    n = check_int("n_vectors", n_vectors, owner=owner, low=1)
    check_real("delta", delta, owner=owner, low=0.0, high=1.0, closed="neither")
    if _fail_prob(1.0, P, n) > delta:
        return math.inf
    lo, hi = 0.0, 1.0
    for _ in range(60):  # the failure bound decreases in eps on (0, 1]
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _fail_prob(mid, P, n) > delta else (lo, mid)
    return hi


def jl_perturbations_needed(eps: float, n_vectors: int, *, delta: float = 0.05) -> int:
    """Smallest P for which :func:`jl_entry_bound` guarantees accuracy ``eps`` (in (0, 1))."""
    owner = "jl_perturbations_needed"
    check_real("eps", eps, owner=owner, low=0.0, high=1.0, closed="neither")
    n = check_int("n_vectors", n_vectors, owner=owner, low=1)
    check_real("delta", delta, owner=owner, low=0.0, high=1.0, closed="neither")
    rate = (eps ** 2 / 2.0 - eps ** 3 / 3.0) / 2.0
    return int(math.ceil(math.log(2.0 * n * n / delta) / rate))


def gradient_error(d: int, num_perturbations: int) -> float:
    """Gaussian :math:`E\\|\\hat g-g\\|^2/\\|g\\|^2=(d+1)/P` (exact)."""
    d = check_int("d", d, owner="gradient_error", low=1)
    P = check_int("num_perturbations", num_perturbations, owner="gradient_error", low=1)
    return (d + 1.0) / P


def expected_gradient_cosine(d: int, num_perturbations: int) -> float:
    """:math:`\\cos(\\hat g,g)\\approx E[g^\\top\\hat g]/\\sqrt{E\\|\\hat g\\|^2}\\|g\\|=\\sqrt{P/(d+P+1)}`
    (Gaussian; the ratio of expectations, accurate when P is not tiny): falls like
    :math:`\\sqrt{P/d}`, the parameter-space "paradox"."""
    d = check_int("d", d, owner="expected_gradient_cosine", low=1)
    P = check_int("num_perturbations", num_perturbations, owner="expected_gradient_cosine", low=1)
    return math.sqrt(P / (d + P + 1.0))


def one_step_prediction(K, probs_o, grad_logits_u, lr: float) -> torch.Tensor:
    """Predicted :math:`\\Delta\\log\\pi(\\cdot|x_o)=-\\eta A_o K G_u`, shape ``(N_o, V)``, with
    :math:`A_o=I-\\mathbf 1\\pi_o^\\top`. ``K``: (N_o V, N_u V) (exact or ZO); ``probs_o``:
    (N_o, V); ``grad_logits_u``: :math:`G_u=\\partial L/\\partial z(X_u)`, (N_u, V)."""
    owner = "one_step_prediction"
    check_real("lr", lr, owner=owner, low=0.0)
    K = torch.as_tensor(K, dtype=torch.float64)
    pi = torch.as_tensor(probs_o, dtype=torch.float64)
    G = torch.as_tensor(grad_logits_u, dtype=torch.float64)
    if pi.dim() != 2 or G.dim() != 2 or pi.shape[1] != G.shape[1]:
        fail("probs_o", owner, "(N_o, V) and grad_logits_u (N_u, V) with the same V",
             (tuple(pi.shape), tuple(G.shape)))
    No, V = pi.shape
    if tuple(K.shape) != (No * V, G.shape[0] * V):
        fail("K", owner, f"a kernel of shape ({No * V}, {G.shape[0] * V})", tuple(K.shape))
    dz = -lr * (K @ G.reshape(-1)).reshape(No, V)
    return dz - (dz * pi).sum(1, keepdim=True)
