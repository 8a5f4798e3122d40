"""The spec's two-sided PL test problems with known constants (spec §3), in batched numpy.

Every problem gives ``grad(x, y) -> (g_x, g_y)`` over a leading batch axis, ``phi(x)``
(exact or by a 1-D maximisation), ``phi_star``, ``f``, a torch objective ``torch_f`` for the
user-facing solvers, and its :class:`TwoSidedPL` constants.

1. ``yang2d``: f = x^2 + 3 sin^2 x sin^2 y - 4 y^2 - 10 sin^2 y (Yang et al. 2020), nonconvex-
   nonconcave; Phi(x) = x^2.
2. ``sine``: f = sum h(x_i) + eps sum B_ij sin x_i sin y_j - sum h(y_j), h = t^2 + 3 sin^2 t.
3. ``quadratic``: f = x'Ax/2 + eps x'By - y'Cy/2, spectra in [0.05, 1].
4. ``robust_ls``: f = (|Ax - y|^2 - gamma |y - b|^2) / N on the diabetes data, column 2 duplicated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from optzoo._core.rng import np_rng
from optzoo.talda.constants import TwoSidedPL

__all__ = ["Problem", "yang2d", "sine_family", "quadratic", "robust_ls", "mu_h", "yang2d_pl_grid"]


def _h(t):
    return t**2 + 3 * np.sin(t) ** 2


def _dh(t):
    return 2 * t + 3 * np.sin(2 * t)


def mu_h(kappa: float, *, n: int = 600_001) -> float:
    """Grid PL constant of h_k(t) = h(t) + k sin t on [-30, 30]: inf h_k'^2 / (2 (h_k - min h_k))."""
    t = np.linspace(-30, 30, n)
    hk = _h(t) + kappa * np.sin(t)
    gap = hk - hk.min()
    ok = gap > 1e-10
    return float((((_dh(t) + kappa * np.cos(t)) ** 2)[ok] / (2 * gap[ok])).min())


def yang2d_pl_grid(*, n_t: int = 30_001, n_s: int = 41) -> tuple[float, float]:
    """Grid estimates of (mu_x, mu_y) for ``yang2d`` (t in [-30, 30]).

    f - min_x f = x^2 + 3 s sin^2 x with s = sin^2 y in [0, 1]; max_y f - f = 4 y^2 + c sin^2 y
    with c = 10 - 3 sin^2 x in [7, 10]. Both infima are over the grid of t and of s or c.
    """
    t = np.linspace(-30, 30, n_t)
    t = t[np.abs(t) > 1e-6]
    s = np.linspace(0, 1, n_s)[:, None]
    g = t**2 + 3 * s * np.sin(t) ** 2
    mu_x = float(((2 * t + 3 * s * np.sin(2 * t)) ** 2 / (2 * g)).min())
    c = np.linspace(7, 10, n_s)[:, None]
    g = 4 * t**2 + c * np.sin(t) ** 2
    mu_y = float(((8 * t + c * np.sin(2 * t)) ** 2 / (2 * g)).min())
    return mu_x, mu_y


@dataclass
class Problem:
    name: str
    n: int
    m: int
    constants: TwoSidedPL
    box: float
    data: dict = field(default_factory=dict)

    def inits(self, rng, count: int):
        x = rng.uniform(-self.box, self.box, size=(count, self.n))
        y = rng.uniform(-self.box, self.box, size=(count, self.m))
        return x, y

    # the following are filled per kind below
    def grad(self, x, y):  # pragma: no cover - overridden
        raise NotImplementedError

    def lyapunov(self, x, y, lam):
        """Exact P = [Phi(x) - Phi*] + lam [Phi(x) - f(x, y)] (batched)."""
        ph = self.phi(x)
        return (ph - self.phi_star) + lam * (ph - self.f(x, y))


class _Yang(Problem):
    phi_star = 0.0

    def f(self, x, y):
        x, y = x[..., 0], y[..., 0]
        return x**2 + 3 * np.sin(x) ** 2 * np.sin(y) ** 2 - 4 * y**2 - 10 * np.sin(y) ** 2

    def grad(self, x, y):
        sx2, sy2 = np.sin(x) ** 2, np.sin(y) ** 2
        gx = 2 * x + 3 * np.sin(2 * x) * sy2
        gy = 3 * sx2 * np.sin(2 * y) - 8 * y - 10 * np.sin(2 * y)
        return gx, gy

    def phi(self, x):
        return x[..., 0] ** 2

    @staticmethod
    def torch_f(x, y):
        import torch

        return (x**2 + 3 * torch.sin(x) ** 2 * torch.sin(y) ** 2 - 4 * y**2 - 10 * torch.sin(y) ** 2).sum()


def yang2d() -> Problem:
    """Problem 1. Constants from the spec: mu = (0.17553, 1.26031), L = (8, 28, 3)."""
    return _Yang("yang2d", 1, 1, TwoSidedPL(0.17553, 1.26031, 8.0, 28.0, 3.0), box=2.0)


class _Sine(Problem):
    phi_star = 0.0

    def f(self, x, y):
        B, eps = self.data["B"], self.data["eps"]
        return (_h(x).sum(-1) + eps * np.einsum("bi,ij,bj->b", np.sin(x), B, np.sin(y))
                - _h(y).sum(-1))

    def grad(self, x, y):
        B, eps = self.data["B"], self.data["eps"]
        sx, sy = np.sin(x), np.sin(y)
        gx = _dh(x) + eps * np.cos(x) * (sy @ B.T)
        gy = eps * np.cos(y) * (sx @ B) - _dh(y)
        return gx, gy

    def phi(self, x):
        # max_y per coordinate of a sin t - h(t), a = eps (B' sin x)_j; it is PL in t (|a| < 2.5),
        # so the unique root of a cos t - h'(t) (decreasing near 0) is the maximiser.
        a = self.data["eps"] * (np.sin(x) @ self.data["B"])
        lo, hi = np.full_like(a, -1.0), np.full_like(a, 1.0)
        for _ in range(80):
            mid = (lo + hi) / 2
            up = a * np.cos(mid) - _dh(mid) > 0
            lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
        t = (lo + hi) / 2
        return _h(x).sum(-1) + (a * np.sin(t) - _h(t)).sum(-1)

    def torch_f(self, x, y):
        import torch

        B = torch.as_tensor(self.data["B"], dtype=x.dtype)
        h = lambda t: t**2 + 3 * torch.sin(t) ** 2  # noqa: E731
        return h(x).sum() + self.data["eps"] * (torch.sin(x) @ B @ torch.sin(y)) - h(y).sum()


def sine_family(eps: float, *, seed: int = 0, n: int = 5) -> Problem:
    """Problem 2: an orthonormal B from ``seed``; L_x = L_y = 8 + eps b_inf, L_xy = eps,
    mu_x = mu_y = mu_h(eps b_inf)."""
    q, _ = np.linalg.qr(np_rng(seed, "talda-sine-B").standard_normal((n, n)))
    b_inf = float(max(np.abs(q).sum(0).max(), np.abs(q).sum(1).max()))
    mu = mu_h(eps * b_inf)
    L = 8.0 + eps * b_inf
    return _Sine(f"sine(eps={eps:g})", n, n, TwoSidedPL(mu, mu, L, L, eps), box=2.0,
                 data={"B": q, "eps": float(eps), "b_inf": b_inf})


class _Quad(Problem):
    phi_star = 0.0

    def f(self, x, y):
        d = self.data
        return (0.5 * np.einsum("bi,ij,bj->b", x, d["A"], x) + d["eps"] * np.einsum("bi,ij,bj->b", x, d["B"], y)
                - 0.5 * np.einsum("bi,ij,bj->b", y, d["C"], y))

    def grad(self, x, y):
        d = self.data
        return x @ d["A"] + d["eps"] * (y @ d["B"].T), d["eps"] * (x @ d["B"]) - y @ d["C"]

    def phi(self, x):
        return 0.5 * np.einsum("bi,ij,bj->b", x, self.data["H"], x)

    def torch_f(self, x, y):
        import torch

        d = {k: torch.as_tensor(v, dtype=x.dtype) for k, v in self.data.items() if k in "ABC"}
        return 0.5 * x @ d["A"] @ x + self.data["eps"] * (x @ d["B"] @ y) - 0.5 * y @ d["C"] @ y


def quadratic(eps: float, *, seed: int = 0, n: int = 10, rank_deficient: bool = False) -> Problem:
    """Problem 3: A = Q1 diag(geomspace(0.05, 1)) Q1', C likewise, |B|_2 = 1. The
    rank-deficient variant zeroes the 3 smallest eigenvalues and projects B on the ranges."""
    rng = np_rng(seed, "talda-quad")
    q1, _ = np.linalg.qr(rng.standard_normal((n, n)))
    q2, _ = np.linalg.qr(rng.standard_normal((n, n)))
    qb, _ = np.linalg.qr(rng.standard_normal((n, n)))
    ev = np.geomspace(0.05, 1.0, n)
    if rank_deficient:
        ev = ev.copy()
        ev[:3] = 0.0
    A, C = q1 @ np.diag(ev) @ q1.T, q2 @ np.diag(ev) @ q2.T
    B = qb
    if rank_deficient:
        pa = q1[:, 3:] @ q1[:, 3:].T
        pc = q2[:, 3:] @ q2[:, 3:].T
        B = pa @ B @ pc
    H = A + eps**2 * B @ np.linalg.pinv(C) @ B.T
    mu = float(ev[ev > 0].min())
    return _Quad(f"quadratic(eps={eps:g})", n, n, TwoSidedPL(mu, mu, 1.0, 1.0, float(eps)), box=1.0,
                 data={"A": A, "B": B, "C": C, "H": H, "eps": float(eps)})


class _RobustLS(Problem):
    def f(self, x, y):
        d = self.data
        r = x @ d["A"].T - y
        return ((r * r).sum(-1) - d["gamma"] * ((y - d["b"]) ** 2).sum(-1)) / d["N"]

    def grad(self, x, y):
        d = self.data
        r = x @ d["A"].T - y
        return (2 / d["N"]) * (r @ d["A"]), (2 / d["N"]) * (-r - d["gamma"] * (y - d["b"]))

    def phi(self, x):
        d = self.data
        r = x @ d["A"].T - d["b"]
        return d["gamma"] / (d["gamma"] - 1) * (r * r).sum(-1) / d["N"]

    def ls_distance(self, x):
        """Distance of each x to the least-squares solution set x_ls + null(A)."""
        d = self.data
        diff = x - d["x_ls"]
        return np.linalg.norm(diff - (diff @ d["null"]) @ d["null"].T, axis=-1)

    def torch_f(self, x, y):
        import torch

        A = torch.as_tensor(self.data["A"], dtype=x.dtype)
        b = torch.as_tensor(self.data["b"], dtype=x.dtype)
        return (((A @ x - y) ** 2).sum() - self.data["gamma"] * ((y - b) ** 2).sum()) / self.data["N"]


def _diabetes():
    """scikit-learn's bundled diabetes files, read directly: importing sklearn.datasets costs
    seconds, and standardising makes its ``scaled`` flag irrelevant."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("robust_ls needs scikit-learn's bundled diabetes data (pip install scikit-learn)")
    data = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data"
    X = np.loadtxt(data / "diabetes_data_raw.csv.gz")
    t = np.loadtxt(data / "diabetes_target.csv.gz")
    return X, t


def robust_ls(gamma: float) -> Problem:
    """Problem 4 (learning illustration). Bundled data (scikit-learn's diabetes set), so nothing
    downloads; column 2 is duplicated to make A'A singular (PL, not strongly convex)."""
    X, t = _diabetes()
    X = (X - X.mean(0)) / X.std(0)
    A = np.concatenate([X, X[:, 2:3]], axis=1)
    b = (t - t.mean()) / t.std()
    N = A.shape[0]
    sv = np.linalg.svd(A, compute_uv=False)
    s_max, s_min = float(sv[0]), float(sv[sv > 1e-8 * sv[0]].min())
    _, _, vt = np.linalg.svd(A)
    null = vt[sv.size - int((sv <= 1e-8 * sv[0]).sum()):].T
    x_ls = np.linalg.lstsq(A, b, rcond=None)[0]
    phi_star = gamma / (gamma - 1) * float(((A @ x_ls - b) ** 2).sum()) / N
    c = TwoSidedPL(2 * s_min**2 / N, 2 * (gamma - 1) / N, 2 * s_max**2 / N, 2 * (gamma - 1) / N, 2 * s_max / N)
    p = _RobustLS(f"robust_ls(gamma={gamma:g})", A.shape[1], N, c, box=1.0,
                  data={"A": A, "b": b, "N": N, "gamma": float(gamma), "null": null, "x_ls": x_ls})
    p.phi_star = phi_star
    return p
