"""Top Hessian eigenvalue of Phi and of L in the body parameters, from ``torch.func`` HVPs.

Mechanism (ii) of arXiv 2605.15530 (reconstructed): the reduced objective
:math:`\\Phi(\\theta)=L(\\theta,W^*(\\theta))` has sharper curvature than the training loss,
especially early. The comparison point is INFERRED: since
:math:`\\nabla^2\\Phi = L_{\\theta\\theta} - L_{\\theta W}L_{WW}^{-1}L_{W\\theta}
\\preceq L_{\\theta\\theta}(\\theta, W^*)` (Schur complement, at the best response), "sharper"
can only hold against :math:`L_{\\theta\\theta}(\\theta, W_t)` at the *current* head, which
early in training is small. :func:`curvature` returns both.

HVPs are forward-over-reverse, ``jvp(grad(f))``; :func:`hessian_top_eig` runs Lanczos (full
reorthogonalisation, the largest Ritz value = the largest algebraic eigenvalue, exact after
``dim`` steps) or power iteration (the eigenvalue of largest magnitude, by its Rayleigh
quotient).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from optzoo._core.deprecation import renamed_kwargs
from optzoo._core.rng import torch_generator
from optzoo._core.validation import check_choice, check_int, check_real, fail

__all__ = ["curvature", "hessian_top_eig"]


def _flat(ts):
    return torch.cat([t.reshape(-1) for t in ts])


def _unflat(v, like):
    out, i = [], 0
    for t in like:
        out.append(v[i:i + t.numel()].reshape(t.shape))
        i += t.numel()
    return tuple(out)


@renamed_kwargs(iters="max_iter")
def hessian_top_eig(fn: Callable, params: Sequence[torch.Tensor], *, max_iter: int = 20,
                    method: str = "lanczos", seed: int = 0) -> float:
    """The top eigenvalue of the Hessian of ``fn`` at ``params`` from at most ``max_iter`` HVPs
    (Lanczos stops early on an invariant subspace; ``iters=`` until December 2026, still
    accepted for one release with a ``FutureWarning``).

    ``fn(*tensors) -> scalar tensor`` takes tensors shaped like ``params`` (detached copies
    are used; ``params`` are not modified).

    >>> import torch
    >>> A = torch.diag(torch.tensor([3.0, 1.0, -2.0], dtype=torch.float64))
    >>> round(hessian_top_eig(lambda x: 0.5 * x @ A @ x, [torch.ones(3, dtype=torch.float64)], max_iter=3), 8)
    3.0
    """
    owner = "hessian_top_eig"
    if not callable(fn):
        fail("fn", owner, "a callable fn(*params) -> scalar", fn, exc=TypeError)
    max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    check_choice("method", method, ("lanczos", "power"), owner=owner)
    ps = tuple(p.detach() for p in params)
    if not ps:
        fail("params", owner, "a non-empty sequence of tensors", params)
    dim = sum(p.numel() for p in ps)
    grad_fn = torch.func.grad(lambda *a: fn(*a), argnums=tuple(range(len(ps))))

    def hvp(v):
        _, out = torch.func.jvp(grad_fn, ps, _unflat(v, ps))
        return _flat(out)

    g = torch_generator(seed, "hessian_top_eig")
    v = torch.randn(dim, generator=g, dtype=torch.float64).to(ps[0].dtype).to(ps[0].device)
    v = v / torch.linalg.vector_norm(v)
    if method == "power":
        lam = torch.zeros((), dtype=v.dtype)
        for _ in range(max_iter):
            w = hvp(v)
            lam = v @ w
            n = torch.linalg.vector_norm(w)
            if n == 0:
                return 0.0
            v = w / n
        return float(lam)
    k = min(max_iter, dim)
    Q = torch.zeros(k, dim, dtype=v.dtype, device=v.device)
    alpha, beta = [], []
    q, b_prev, q_prev = v, None, None
    for j in range(k):
        Q[j] = q
        w = hvp(q)
        a = q @ w
        w = w - a * q - (b_prev * q_prev if b_prev is not None else 0.0)
        w = w - Q[:j + 1].T @ (Q[:j + 1] @ w)  # full reorthogonalisation
        alpha.append(a)
        b = torch.linalg.vector_norm(w)
        if j == k - 1 or b <= 1e-10 * max(1.0, float(abs(a))):
            break
        beta.append(b)
        q_prev, q, b_prev = q, w / b, b
    n = len(alpha)
    T = torch.diag(torch.stack(alpha))
    if n > 1:
        off = torch.stack(beta[:n - 1])
        T = T + torch.diag(off, 1) + torch.diag(off, -1)
    return float(torch.linalg.eigvalsh(T.double())[-1])


@renamed_kwargs(iters="max_iter")
def curvature(model: torch.nn.Module, loss="mse", X=None, Y=None, *, head=None, lam: float = 1e-4,
              which: Sequence[str] = ("phi", "L"), method: str = "lanczos", max_iter: int = 20,
              seed: int = 0) -> dict:
    """``{"phi": lambda_max(Hess_theta Phi), "L": lambda_max(Hess_theta L(theta, W_t))}``.

    ``loss``: ``"mse"`` (``(1/2N) sum ||f(x) - y||^2``, the closed-form head's loss; the only
    loss for which Phi is available) or a callable ``loss(output, Y) -> scalar`` (then only
    ``"L"`` may be asked for). The ridge term ``(lam/2)||W||^2`` is in both objectives (it has
    no theta-curvature). ``head``: as in :func:`~optzoo.stackelberg.split_head`; it must be a
    module (its input defines the features). ``X``, ``Y``: the data (Y of shape (N, K) or (N,)).
    ``method``, ``max_iter`` (``iters=`` until December 2026) and ``seed`` go to
    :func:`hessian_top_eig`. The model's parameters are not modified.
    """
    from optzoo.stackelberg.best_response import head_features, stackelberg_objective
    from optzoo.stackelberg.groups import _resolve_head

    owner = "curvature"
    which = tuple(which)
    for w in which:
        check_choice("which", w, ("phi", "L"), owner=owner)
    if not which:
        fail("which", owner, "a non-empty subset of ('phi', 'L')", which)
    if not (loss == "mse" or callable(loss)):
        fail("loss", owner, "'mse' or a callable loss(output, Y)", loss)
    if "phi" in which and loss != "mse":
        fail("loss", owner, "'mse' when 'phi' is asked for (the closed-form head needs the squared "
             "loss)", loss)
    if not torch.is_tensor(X) or not torch.is_tensor(Y):
        fail("X", owner, "a torch tensor (with Y a tensor too)", type(X).__name__, exc=TypeError)
    lam = check_real("lam", lam, owner=owner, low=0.0, closed="neither" if "phi" in which else "left")
    max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    mod, head_names = _resolve_head(model, head, owner)
    if mod is None:
        fail("head", owner, "a submodule (its input defines the features)", head)
    named = {n: p.detach() for n, p in model.named_parameters()}
    hs = set(head_names)
    body_names = [n for n in named if n not in hs]
    fixed = {n: named[n] for n in hs}
    has_bias = getattr(mod, "bias", None) is not None
    Yt = Y.unsqueeze(-1) if Y.ndim == 1 else Y
    N = X.shape[0]
    if loss == "mse":
        with torch.no_grad():
            width = model(X).reshape(N, -1).shape[1]
        if Yt.shape[0] != N or Yt.reshape(N, -1).shape[1] != width:
            fail("Y", owner, f"targets of shape (N={N}, {width}) or (N,) when the output has one "
                 "column (the model's output width)", tuple(Y.shape))

    def as_dict(ts):
        return {**fixed, **dict(zip(body_names, ts, strict=True))}

    def phi_fn(*ts):
        H, _ = head_features(model, X, head=mod, params=as_dict(ts))
        return stackelberg_objective(H, Yt.to(H.dtype), lam=lam, bias=has_bias)[0]

    reg = 0.5 * lam * sum((fixed[n] ** 2).sum() for n in hs)

    def l_fn(*ts):
        out = torch.func.functional_call(model, as_dict(ts), (X,))
        if loss == "mse":
            r = out.reshape(N, -1) - Yt.reshape(N, -1).to(out.dtype)
            return (r * r).sum() / (2 * N) + reg
        return loss(out, Y) + reg

    body = [named[n] for n in body_names]
    res = {}
    for w in which:
        res[w] = hessian_top_eig(phi_fn if w == "phi" else l_fn, body, max_iter=max_iter, method=method,
                                 seed=seed)
    return res
