"""The empirical NTK of a model and its zeroth-order (ZO) estimate, with ``torch.func``.

For outputs :math:`z_\\theta(x)\\in\\mathbb R^V` and Jacobians :math:`J(x)=\\partial z/\\partial\\theta`
(rows: the "neural tangent vectors"),

.. math::
    K(x_o,x_u)=J(x_o)J(x_u)^\\top,\\qquad
    K_{ZO}(x_o,x_u)=\\tfrac1P\\,(J(x_o)U)(J(x_u)U)^\\top,\\quad U=[u_1..u_P]\\in\\mathbb R^{d\\times P},

so each entry of :math:`K_{ZO}` is the inner product of two tangent vectors after the random
projection :math:`U^\\top/\\sqrt P`; :math:`E[K_{ZO}]=K`. :math:`JU` costs P forward-mode JVPs
(``method="jvp"``) or 2P forward passes (``method="finite_difference"``, MeZO's route).
Both are computed in float64 by default so that finite-difference bias is not mistaken for
projection error. The directions are the ones :class:`~optzoo.zo_sgd.ZOSGD` draws at step 0
with the same seed (parameters in ``model.named_parameters()`` order).

Rows are example-major: row ``i * V + v`` is output ``v`` of example ``i``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from optzoo._core.validation import check_choice, check_int, check_real, check_type, fail
from optzoo.zo_sgd.optim import DISTRIBUTIONS, zo_directions

__all__ = ["ZOProjections", "empirical_ntk", "label_logits", "last_token_logits", "zo_entk",
           "zo_projections"]

KERNEL_METHODS = ("jvp", "finite_difference")


def last_token_logits(out) -> torch.Tensor:
    """Default ``output_fn``: the logits at the last position (HF causal LMs), or the output
    itself when it is already ``(N, V)``."""
    z = out.logits if hasattr(out, "logits") else out
    if not torch.is_tensor(z):
        raise TypeError(f"The model output must be a tensor or have '.logits'. Got {type(out).__name__}.")
    return z[:, -1, :] if z.dim() == 3 else z


def label_logits(token_ids) -> Callable:
    """``output_fn`` for prompt-style classification (MeZO): last-position logits of the
    label words ``token_ids`` only, ``(N, V)`` with ``V = len(token_ids)``."""
    idx = torch.as_tensor(list(token_ids), dtype=torch.long)

    def fn(out):
        return last_token_logits(out)[:, idx.to(last_token_logits(out).device)]

    return fn


def _eager_attention(m) -> None:
    """HF models: plain (eager) attention, since torch's fused SDPA kernels have no forward-mode
    derivative and no batching rule for their backward."""
    if hasattr(m, "set_attn_implementation"):
        try:
            m.set_attn_implementation("eager")
            return
        except (ValueError, AttributeError, TypeError):
            pass
    cfg = getattr(m, "config", None)
    if cfg is not None and hasattr(cfg, "_attn_implementation"):
        cfg._attn_implementation = "eager"


def _prepare(model, owner, dtype):
    check_type("model", model, torch.nn.Module, owner=owner, what="a torch.nn.Module")
    m = copy.deepcopy(model).to(dtype).eval()
    _eager_attention(m)
    names = [n for n, _ in m.named_parameters()]
    if not names:
        fail("model", owner, "a module with parameters", type(model).__name__)
    params = {n: p.detach() for n, p in m.named_parameters()}
    return m, params


def _split(inputs, owner, name, dtype):
    """``inputs`` as a list of per-example argument tuples (batch dim kept, size 1)."""
    if torch.is_tensor(inputs):
        x = inputs.to(dtype) if torch.is_floating_point(inputs) else inputs
        if x.dim() < 1 or x.shape[0] < 1:
            fail(name, owner, "a tensor with a non-empty batch dimension", tuple(x.shape))
        return x, int(x.shape[0])
    if isinstance(inputs, Mapping) and inputs and all(torch.is_tensor(v) for v in inputs.values()):
        n = {int(v.shape[0]) for v in inputs.values()}
        if len(n) != 1:
            fail(name, owner, "a dict of tensors sharing the batch dimension", sorted(n))
        return {k: (v.to(dtype) if torch.is_floating_point(v) else v) for k, v in inputs.items()}, n.pop()
    fail(name, owner, "a tensor (e.g. input_ids) or a dict of tensors with a batch dimension",
         type(inputs).__name__, exc=TypeError)


def _call(m, params, x, output_fn):
    from torch.func import functional_call

    out = functional_call(m, params, (x,)) if torch.is_tensor(x) else functional_call(m, params, (), x)
    return output_fn(out)


def _row(x, i):
    return x[i:i + 1] if torch.is_tensor(x) else {k: v[i:i + 1] for k, v in x.items()}


def _outputs(m, params, x, output_fn, owner):
    z = _call(m, params, x, output_fn)
    if not torch.is_tensor(z) or z.dim() != 2:
        fail("output_fn", owner, "a function returning an (N, V) tensor",
             tuple(z.shape) if torch.is_tensor(z) else type(z).__name__)
    return z


def _flat(tangent: dict, names) -> torch.Tensor:
    """(B, *shape) per parameter -> (B, d)."""
    return torch.cat([tangent[n].reshape(tangent[n].shape[0], -1) for n in names], dim=1)


def _jacobian(m, params, x, n, output_fn) -> torch.Tensor:
    """J of all N*V outputs, (N*V, d), one example at a time (vmap over its V cotangents)."""
    from torch.func import vjp, vmap

    names = list(params)
    rows = []
    for i in range(n):
        xi = _row(x, i)
        zi, pull = vjp(lambda p, xi=xi: _call(m, p, xi, output_fn)[0], params)
        (g,) = vmap(pull)(torch.eye(zi.numel(), dtype=zi.dtype))
        rows.append(_flat(g, names))
    return torch.cat(rows, 0)


def empirical_ntk(model: torch.nn.Module, inputs_o, inputs_u=None, *,
                  output_fn: Callable | None = None, dtype: torch.dtype = torch.float64,
                  max_jacobian_bytes: int = 2 ** 28) -> torch.Tensor:
    """Exact empirical NTK :math:`K=J(X_o)J(X_u)^\\top`, shape ``(N_o V, N_u V)``.

    ``inputs_u=None`` gives the Gram kernel of ``inputs_o``. Jacobian rows come from
    ``torch.func.vjp`` (vmapped over each example's V cotangents). When the Jacobian of the
    update set would exceed ``max_jacobian_bytes``, it is never held whole: each example's
    rows :math:`g=J(x_u)^\\top e_v` are pushed through ``torch.func.jvp`` on the observation set
    (block-wise, memory :math:`O(Vd)`), at about twice the compute.

    >>> import torch
    >>> from optzoo.zo_sgd import empirical_ntk
    >>> lin = torch.nn.Linear(3, 2, bias=False)
    >>> X = torch.randn(4, 3, dtype=torch.float64)
    >>> K = empirical_ntk(lin, X)
    >>> bool(torch.allclose(K, torch.kron(X @ X.T, torch.eye(2, dtype=torch.float64))))
    True
    """
    owner = "empirical_ntk"
    output_fn = output_fn or last_token_logits
    check_int("max_jacobian_bytes", max_jacobian_bytes, owner=owner, low=1)
    m, params = _prepare(model, owner, dtype)
    xo, no = _split(inputs_o, owner, "inputs_o", dtype)
    xu, nu = (xo, no) if inputs_u is None else _split(inputs_u, owner, "inputs_u", dtype)
    V = _outputs(m, params, _row(xo, 0), output_fn, owner).shape[1]
    d = sum(p.numel() for p in params.values())
    itemsize = torch.empty(0, dtype=dtype).element_size()
    if nu * V * d * itemsize <= max_jacobian_bytes:
        Ju = _jacobian(m, params, xu, nu, output_fn)
        Jo = Ju if inputs_u is None else _jacobian(m, params, xo, no, output_fn)
        return Jo @ Ju.T
    from torch.func import jvp, vjp, vmap

    names = list(params)
    cols = []
    for i in range(nu):
        xi = _row(xu, i)
        zi, pull = vjp(lambda p, xi=xi: _call(m, p, xi, output_fn)[0], params)
        (g,) = vmap(pull)(torch.eye(zi.numel(), dtype=zi.dtype))

        def push(t):
            return jvp(lambda p: _call(m, p, xo, output_fn), (params,), (t,))[1].reshape(-1)

        cols.append(vmap(push)({n: g[n] for n in names}).T)  # (N_o V, V)
    return torch.cat(cols, 1)


@dataclass(frozen=True)
class ZOProjections:
    """Projected tangents :math:`A=J(X)U` (``A[:, p]`` for direction ``p``), shape (N V, P).

    ``kernel(P)`` is :math:`K_{ZO}` from the first P directions (nested prefixes of one draw,
    so a whole P grid costs one set of JVPs).
    """

    A: torch.Tensor
    n_examples: int
    n_outputs: int
    seed: int
    distribution: str
    method: str

    @property
    def num_perturbations(self) -> int:
        return int(self.A.shape[1])

    def kernel(self, num_perturbations: int | None = None, rows_o=None, rows_u=None) -> torch.Tensor:
        P = self.num_perturbations if num_perturbations is None else check_int(
            "num_perturbations", num_perturbations, owner="ZOProjections.kernel", low=1,
            high=self.num_perturbations)
        A = self.A[:, :P]
        Ao = A if rows_o is None else A[rows_o]
        Au = A if rows_u is None else A[rows_u]
        return Ao @ Au.T / P


def zo_projections(model: torch.nn.Module, inputs, *, num_perturbations: int = 64,
                   output_fn: Callable | None = None, method: str = "jvp", eps: float = 1e-3,
                   distribution: str = "gaussian", seed: int = 0,
                   dtype: torch.dtype = torch.float64, chunk: int = 16) -> ZOProjections:
    """The P projected tangents :math:`J(X)u_p` of every output, by JVP or central differences.

    ``method="jvp"``: ``torch.func.jvp`` with tangent :math:`u_p` (exact). ``"finite_difference"``:
    :math:`(z(\\theta+\\epsilon u_p)-z(\\theta-\\epsilon u_p))/(2\\epsilon)`, the quantity MeZO
    forms from 2 forward passes (bias :math:`O(\\epsilon^2)`). Directions are vmapped in
    chunks of ``chunk`` (memory ``chunk * d`` numbers).
    """
    owner = "zo_projections"
    output_fn = output_fn or last_token_logits
    P = check_int("num_perturbations", num_perturbations, owner=owner, low=1)
    check_choice("method", method, KERNEL_METHODS, owner=owner)
    check_choice("distribution", distribution, DISTRIBUTIONS, owner=owner)
    check_real("eps", eps, owner=owner, low=0.0, closed="neither")
    seed = check_int("seed", seed, owner=owner, low=0)
    chunk = check_int("chunk", chunk, owner=owner, low=1)
    m, params = _prepare(model, owner, dtype)
    x, n = _split(inputs, owner, "inputs", dtype)
    z0 = _outputs(m, params, x, output_fn, owner)
    names, plist = list(params), list(params.values())
    from torch.func import jvp, vmap

    def f(p):
        return _call(m, p, x, output_fn).reshape(-1)

    def push(t):
        if method == "jvp":
            return jvp(f, (params,), (t,))[1]
        plus = {k: params[k] + eps * t[k] for k in names}
        minus = {k: params[k] - eps * t[k] for k in names}
        return (f(plus) - f(minus)) / (2.0 * eps)

    cols = []
    for start in range(0, P, chunk):
        idx = range(start, min(P, start + chunk))
        dirs = [zo_directions(plist, seed=seed, step=0, index=i, distribution=distribution) for i in idx]
        t = {k: torch.stack([u[j] for u in dirs]) for j, k in enumerate(names)}
        cols.append(vmap(push)(t))
    A = torch.cat(cols, 0).T.contiguous()
    return ZOProjections(A, n, int(z0.shape[1]), seed, distribution, method)


def zo_entk(model: torch.nn.Module, inputs_o, inputs_u=None, *, num_perturbations: int = 64,
            output_fn: Callable | None = None, method: str = "jvp", eps: float = 1e-3,
            distribution: str = "gaussian", seed: int = 0,
            dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """ZO empirical NTK :math:`K_{ZO}=\\tfrac1P (J_oU)(J_uU)^\\top`, shape ``(N_o V, N_u V)``.

    Unbiased for :func:`empirical_ntk` (exactly, for ``method="jvp"``); its per-entry error is
    governed by P, not by the parameter dimension (see :func:`~optzoo.zo_sgd.jl_entry_bound`).

    >>> import torch
    >>> from optzoo.zo_sgd import empirical_ntk, zo_entk
    >>> lin = torch.nn.Linear(50, 2, bias=False)
    >>> X = torch.randn(3, 50, dtype=torch.float64)
    >>> K, Kzo = empirical_ntk(lin, X), zo_entk(lin, X, num_perturbations=4000, seed=0)
    >>> bool(((Kzo - K).norm() / K.norm()) < 0.1)
    True
    """
    kw = dict(num_perturbations=num_perturbations, output_fn=output_fn, method=method, eps=eps,
              distribution=distribution, seed=seed, dtype=dtype)
    if inputs_u is None:
        return zo_projections(model, inputs_o, **kw).kernel()
    po = zo_projections(model, inputs_o, **kw)
    pu = zo_projections(model, inputs_u, **kw)
    return po.A @ pu.A.T / po.num_perturbations
