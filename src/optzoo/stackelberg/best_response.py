"""The follower's exact best response and the Stackelberg reduced objective Phi.

For a linear (ridge) head on features :math:`H\\in\\mathbb R^{N\\times m}` (rows = samples) and
targets :math:`Y\\in\\mathbb R^{N\\times K}`, with the squared loss

.. math::  L(\\theta, W) = \\tfrac1{2N}\\|H_\\theta W^\\top - Y\\|_F^2 + \\tfrac\\lambda2\\|W\\|_F^2,

the best response and the reduced (variable-projection, Golub-Pereyra) objective are

.. math::
    W^*(\\theta) = Y^\\top H (H^\\top H + N\\lambda I)^{-1},\\qquad
    \\Phi(\\theta) = L(\\theta, W^*(\\theta))
                 = \\tfrac\\lambda2\\,\\mathrm{tr}\\big(Y^\\top (H H^\\top + N\\lambda I)^{-1} Y\\big).

Both are differentiable in :math:`H` (``torch.linalg.solve``); by the envelope theorem
:math:`\\nabla\\Phi(\\theta) = \\partial_\\theta L(\\theta, W^*(\\theta))`. Leading batch
dimensions are allowed. Only the squared loss has this closed form (cross-entropy heads are not
covered). With ``bias=True`` a column of ones is appended to H, so the bias is ridge-penalised
like the weights (INFERRED convention).
"""

from __future__ import annotations

import torch

from optzoo._core.validation import check_bool, check_choice, check_real, fail

__all__ = ["exact_head_best_response", "head_features", "stackelberg_objective"]


def _prepare(features, targets, lam, bias, owner):
    if not torch.is_tensor(features) or not torch.is_tensor(targets):
        fail("features", owner, "a torch tensor (with targets a tensor too)",
             type(features).__name__ + "/" + type(targets).__name__, exc=TypeError)
    lam = check_real("lam", lam, owner=owner, low=0.0, closed="neither")
    check_bool("bias", bias, owner=owner)
    if features.ndim < 2:
        fail("features", owner, "a tensor of shape (..., N, m)", tuple(features.shape))
    if features.shape[-2] == 0:
        fail("features", owner, "a tensor of shape (..., N, m) with N >= 1 sample (no sample, "
             "no best response)", tuple(features.shape))
    Y = targets.unsqueeze(-1) if targets.ndim == features.ndim - 1 else targets
    if Y.shape[:-1] != features.shape[:-1]:
        fail("targets", owner, f"a tensor of shape (..., N={features.shape[-2]}, K) or (..., N) "
             "matching features", tuple(targets.shape))
    if not bool(torch.isfinite(features).all()) or not bool(torch.isfinite(Y).all()):
        fail("features", owner, "finite (with finite targets)", "NaN or inf")
    H = features
    if bias:
        H = torch.cat([H, torch.ones(*H.shape[:-1], 1, dtype=H.dtype, device=H.device)], -1)
    return H, Y.to(H.dtype), lam


def _solve_head(H, Y, lam, owner="exact_head_best_response"):
    N, m = H.shape[-2], H.shape[-1]
    HT = H.transpose(-1, -2)
    try:
        if m <= N:  # primal m x m system
            A = HT @ H + N * lam * torch.eye(m, dtype=H.dtype, device=H.device)
            return torch.linalg.solve(A, HT @ Y).transpose(-1, -2)           # (K, m)
        A = H @ HT + N * lam * torch.eye(N, dtype=H.dtype, device=H.device)  # kernel N x N system
        return (HT @ torch.linalg.solve(A, Y)).transpose(-1, -2)
    except torch.linalg.LinAlgError:
        fail("lam", owner, f"large enough that the ridge system is solvable in {H.dtype} (the "
             "features are rank deficient and N lam I does not lift them above rounding; raise "
             "lam or use float64)", lam)


def exact_head_best_response(features, targets, *, lam: float = 1e-4, bias: bool = False):
    """``(W, b)``: the ridge head minimising L at fixed features (``b`` is None without bias).

    ``W`` has shape (..., K, m) and ``b`` (..., K): assign them to an ``nn.Linear(m, K)`` head
    as ``head.weight``, ``head.bias``. Uses the m x m system when m <= N, else the N x N one.

    >>> import torch
    >>> H = torch.randn(50, 3, dtype=torch.float64); Y = H @ torch.tensor([[1.0], [2.0], [3.0]]).double()
    >>> W, _ = exact_head_best_response(H, Y, lam=1e-10)
    >>> torch.allclose(W, torch.tensor([[1.0, 2.0, 3.0]]).double(), atol=1e-6)
    True
    """
    H, Y, lam = _prepare(features, targets, lam, bias, "exact_head_best_response")
    W = _solve_head(H, Y, lam, "exact_head_best_response")
    return (W[..., :-1], W[..., -1]) if bias else (W, None)


def stackelberg_objective(features, targets, *, lam: float = 1e-4, bias: bool = False,
                          form: str = "primal"):
    """``(phi, W, b)``: Phi = L(theta, W*(theta)) and the best-response head.

    ``form="primal"``: L evaluated at the solved head; ``"kernel"``:
    ``(lam/2) tr(Y' (H H' + N lam I)^-1 Y)`` (cheaper when N < m). Both are differentiable and
    agree to rounding.
    """
    owner = "stackelberg_objective"
    check_choice("form", form, ("primal", "kernel"), owner=owner)
    H, Y, lam = _prepare(features, targets, lam, bias, owner)
    N = H.shape[-2]
    W = _solve_head(H, Y, lam, owner)
    if form == "primal":
        R = H @ W.transpose(-1, -2) - Y
        phi = (R * R).sum((-1, -2)) / (2 * N) + 0.5 * lam * (W * W).sum((-1, -2))
    else:
        A = H @ H.transpose(-1, -2) + N * lam * torch.eye(N, dtype=H.dtype, device=H.device)
        phi = 0.5 * lam * (Y * torch.linalg.solve(A, Y)).sum((-1, -2))
    b = W[..., -1] if bias else None
    return phi, (W[..., :-1] if bias else W), b


def head_features(model: torch.nn.Module, X, *, head=None, params: dict | None = None):
    """``(features, output)``: the input of the head module on ``X`` and the model's output.

    ``head``: as in :func:`~optzoo.stackelberg.split_head` but it must resolve to a module
    (default: the last ``nn.Linear``). ``params``: optional ``{name: tensor}`` for
    ``torch.func.functional_call`` (what :func:`~optzoo.stackelberg.curvature` differentiates).
    """
    from optzoo.stackelberg.groups import _resolve_head

    mod, _ = _resolve_head(model, head, "head_features")
    if mod is None:
        fail("head", "head_features", "a submodule (its input is the feature map)", head)
    seen = []
    handle = mod.register_forward_hook(lambda m, inp, out: seen.append(inp[0]))
    try:
        out = (torch.func.functional_call(model, params, (X,)) if params is not None else model(X))
    finally:
        handle.remove()
    if not seen:
        fail("head", "head_features", "a submodule called in the model's forward", head)
    return seen[-1], out
