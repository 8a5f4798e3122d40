"""The spec's environment 3: a non-smooth strongly convex problem on a finite sticky chain.

.. math::
    F(x,z)=|a_z^\\top x-b_z|+\\tfrac{\\mu}{2}\\|x\\|^2,\\qquad
    f(x)=\\sum_z\\pi_z F(x,z),

on S states with uniform :math:`\\pi` and the chain "stay w.p. p, else resample from
:math:`\\pi`" (``StickyChain`` over state indices; exact :math:`\\tau(1/4)`).
:math:`x^*` is computed through the dual, a box-constrained QP solved by
``scipy.optimize.minimize`` (L-BFGS-B):

.. math::
    \\max_{|\\lambda_z|\\le\\pi_z}\\; -\\lambda^\\top b-\\tfrac{1}{2\\mu}\\|A^\\top\\lambda\\|^2,
    \\qquad x^*=-A^\\top\\lambda^*/\\mu,

and the primal-dual gap is returned so callers can check it. ``run_bank_nonsmooth`` runs P
independent copies of zero-order randomized batching (the library's ``mlmc_weights``,
``sphere_directions`` and estimators) in one numpy loop, like ``bank.run_bank``.
"""

from __future__ import annotations

import numpy as np

from optzoo.markov_zo.zo import (
    mlmc_weights,
    one_point_estimates,
    sphere_directions,
    two_point_estimates,
)

__all__ = ["nonsmooth_instance", "nonsmooth_objective", "nonsmooth_values", "run_bank_nonsmooth"]


def nonsmooth_instance(d: int, n_states: int, mu: float, rng: np.random.Generator) -> dict:
    """A random instance: rows a_z ~ N(0, I/d) (|a_z| ~ 1), b_z ~ N(0, 1), uniform pi; x* and gap."""
    from scipy.optimize import minimize

    A = rng.standard_normal((n_states, d)) / np.sqrt(d)
    b = rng.standard_normal(n_states)
    pi = np.full(n_states, 1.0 / n_states)

    def neg_dual(lam):
        v = A.T @ lam
        return lam @ b + (v @ v) / (2.0 * mu), b + A @ v / mu

    sol = minimize(neg_dual, np.zeros(n_states), jac=True, method="L-BFGS-B",
                   bounds=list(zip(-pi, pi, strict=True)),
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000})
    xstar = -A.T @ sol.x / mu
    primal = nonsmooth_objective(xstar, A, b, mu, pi)
    gap = primal - (-sol.fun)
    return {"A": A, "b": b, "pi": pi, "mu": mu, "xstar": xstar, "fstar": primal, "gap": gap}


def nonsmooth_values(X, Z, A, b, mu):
    """F(X, z) for points X (..., d) and state indices Z (...)."""
    X = np.asarray(X, dtype=float)
    return np.abs(np.einsum("...d,...d->...", X, A[Z]) - b[Z]) + 0.5 * mu * (X ** 2).sum(-1)


def nonsmooth_objective(x, A, b, mu, pi):
    """f(x) = sum_z pi_z F(x, z)."""
    return float(pi @ np.abs(A @ x - b) + 0.5 * mu * x @ x)


class _IndexChains:
    """P sticky chains over S uniform states (stay w.p. p, else a fresh uniform index)."""

    def __init__(self, stay, n_states, rng):
        self.p = np.asarray(stay, dtype=float)
        self.S = n_states
        self.rng = rng
        self.z = rng.integers(n_states, size=self.p.size)

    def path(self, n_used, n_max):
        P = self.p.size
        move = self.rng.random((P, n_max + 1)) >= self.p[:, None]
        fresh = self.rng.integers(self.S, size=(P, n_max + 1))
        move[:, 0] = True
        fresh[:, 0] = self.z
        last = np.maximum.accumulate(np.where(move, np.arange(n_max + 1), 0), axis=1)
        path = np.take_along_axis(fresh, last, axis=1)
        self.z = path[np.arange(P), n_used]
        return path[:, :n_max]


def run_bank_nonsmooth(method: str, inst: dict, *, stay, max_level, lr_mult, smoothing,
                       lr_offset, budget: float, x0, rng: np.random.Generator,
                       checkpoints=(0.125, 0.25, 0.5, 1.0)):
    """ZO-MLMC (``zo2`` two-point / ``zo1`` one-point) on P copies of ``inst``.

    ``stay``, ``max_level``, ``lr_mult``, ``smoothing``, ``lr_offset``: per-copy arrays (or
    scalars); step :math:`\\gamma_k=m/(\\mu(k+k_0))`. Returns squared distances to x* at the
    budget ``checkpoints``, shape (P, C); a diverged copy is recorded as inf.
    """
    A, b, mu, xs = inst["A"], inst["b"], inst["mu"], inst["xstar"]
    S, d = A.shape
    stay = np.asarray(stay, dtype=float)
    P = stay.size
    M = np.broadcast_to(np.asarray(max_level), (P,)).astype(int)
    m = np.broadcast_to(np.asarray(lr_mult, dtype=float), (P,))
    t = np.broadcast_to(np.asarray(smoothing, dtype=float), (P,))
    k0 = np.broadcast_to(np.asarray(lr_offset, dtype=float), (P,))
    x = np.tile(np.asarray(x0, dtype=float), (P, 1))
    chains = _IndexChains(stay, S, rng)
    cps = np.asarray(checkpoints) * budget
    rec = np.full((P, cps.size), np.nan)
    spent = np.zeros(P)
    active = np.ones(P, dtype=bool)
    k = 0
    levels = np.unique(M)
    with np.errstate(over="ignore", invalid="ignore"):
        while active.any():
            J = int(rng.geometric(0.5))
            ws = {lv: mlmc_weights(J, 1, lv) for lv in levels}
            n_max = max(w.size for w in ws.values())
            W = np.zeros((P, n_max))
            n_used = np.zeros(P, dtype=int)
            for lv, w in ws.items():
                W[M == lv, :w.size] = w
                n_used[M == lv] = w.size
            Z = chains.path(n_used, n_max)
            E = sphere_directions(P * n_max, d, rng)
            tr = np.repeat(t, n_max)[:, None]
            Xr = np.repeat(x, n_max, axis=0)
            Zr = Z.ravel()
            fp = nonsmooth_values(Xr + tr * E, Zr, A, b, mu)
            if method == "zo2":
                fm = nonsmooth_values(Xr - tr * E, Zr, A, b, mu)
                g = two_point_estimates(fp, fm, E, tr)
                cost = 2.0 * n_used
            elif method == "zo1":
                g = one_point_estimates(fp, E, tr)
                cost = 1.0 * n_used
            else:
                raise ValueError(f"The 'method' argument of run_bank_nonsmooth must be 'zo2' or "
                                 f"'zo1'. Got {method!r}.")
            G = np.einsum("pn,pnd->pd", W, g.reshape(P, n_max, d))
            x = np.where(active[:, None], x - (m / (mu * (k + k0)))[:, None] * G, x)
            before = spent.copy()
            spent = np.where(active, spent + cost, spent)
            err = ((x - xs) ** 2).sum(1)
            hit = (before[:, None] < cps[None, :]) & (spent[:, None] >= cps[None, :]) & active[:, None]
            rec = np.where(hit, err[:, None], rec)
            bad = ~np.isfinite(err)  # left NaN, recorded as inf below
            active &= (spent < budget) & ~bad
            k += 1
    rec[np.isnan(rec)] = np.inf
    return rec
