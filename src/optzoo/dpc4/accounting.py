"""Privacy accounting for DP-C4 and DP-SGD: calibration by bisection, a ledger with a hard stop.

Neighbouring relation: add/remove one record (Opacus' default). Each optimizer step releases
one or more Gaussian mechanisms; every mechanism enters the ledger as one accountant entry
``(z_t, q_t)`` with ``z_t = s_t / Delta_t`` (noise std over sensitivity, both in sum units)
and ``q_t`` its Poisson sampling rate (``1.0`` for terms that amplification does not cover).

The reported epsilon is always the RDP composition (Mironov 2017; sampled Gaussian per
Mironov, Talwar and Zhang 2019; conversion of Balle et al. 2020, Thm 21) of the ``(z_t, q_t)``
actually used, computed by Opacus' ``RDPAccountant`` code. A second, tighter accountant
(Opacus' PRV accountant) cross-checks it. Per-step epsilons are never summed.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from optzoo._core.validation import check_choice, check_int, check_real, fail

__all__ = [
    "NoiseSchedule",
    "PrivacyBudgetExceeded",
    "PrivacyLedger",
    "calibrate",
    "gaussian_dp_epsilon",
    "rdp_epsilon",
]


class PrivacyBudgetExceeded(RuntimeError):
    """Raised *before* a release that would make the composed epsilon exceed the budget."""


def _need_opacus() -> None:
    try:
        import opacus  # noqa: F401
    except ImportError as exc:
        raise ImportError("DP-C4's privacy accounting uses Opacus' accountants: "
                          "pip install 'optzoo[dp]'") from exc


def _alphas(alphas):
    _need_opacus()
    if alphas is not None:
        return [float(a) for a in alphas]
    from opacus.accountants.rdp import RDPAccountant

    return list(RDPAccountant.DEFAULT_ALPHAS)


def _rdp_vector(entries: Sequence[tuple[float, float, int]], orders) -> np.ndarray:
    """Sum of the RDP curves of ``(z, q, count)`` entries (RDP composes additively)."""
    from opacus.accountants.analysis.rdp import compute_rdp

    total = np.zeros(len(orders))
    for z, q, count in entries:
        total = total + np.asarray(compute_rdp(q=q, noise_multiplier=z, steps=count, orders=orders))
    return total


def _eps_from_rdp(rdp: np.ndarray, orders, delta: float, *, warn: bool = True) -> float:
    from opacus.accountants.analysis.rdp import get_privacy_spent

    eps, best = get_privacy_spent(orders=orders, rdp=rdp, delta=delta)
    if warn and np.isfinite(eps) and best in (orders[0], orders[-1]):
        warnings.warn(
            f"The optimal RDP order {best} sits at the end of the order range; pass wider "
            "'alphas' for a tighter epsilon.", RuntimeWarning, stacklevel=3)
    return float(eps)


_INT_ORDERS = np.arange(2, 64, dtype=float)


def _fast_int_eps(pairs: Sequence[tuple[float, float, int]], delta: float) -> float:
    """Epsilon over the integer orders 2..63 only, vectorised (same binomial formula as Opacus'
    integer-order code). Fewer orders => an upper bound on the Opacus epsilon; used to bracket."""
    from scipy.special import gammaln, logsumexp

    a = _INT_ORDERS[:, None]
    k = np.arange(64, dtype=float)[None, :]
    valid = k <= a
    logc = gammaln(a + 1) - gammaln(k + 1) - gammaln(np.maximum(a - k, 0) + 1)
    rdp = np.zeros(len(_INT_ORDERS))
    for z, q, count in pairs:
        if q == 1.0:
            rdp += count * _INT_ORDERS / (2 * z * z)
            continue
        terms = logc + k * math.log(q) + (a - k) * math.log1p(-q) + (k * k - k) / (2 * z * z)
        rdp += count * logsumexp(np.where(valid, terms, -np.inf), axis=1) / (_INT_ORDERS - 1)
    o = _INT_ORDERS
    eps = rdp - (math.log(delta) + np.log(o)) / (o - 1) + np.log((o - 1) / o)
    return float(np.nanmin(eps))


def _compress(pairs: Sequence[tuple[float, float]]) -> list[tuple[float, float, int]]:
    return [(z, q, c) for (z, q), c in Counter((float(z), float(q)) for z, q in pairs).items()]


def rdp_epsilon(noise_multipliers, sample_rates, *, delta: float, alphas=None) -> float:
    """Epsilon of the composition of sampled Gaussians ``(z_t, q_t)`` by RDP (Opacus' formulas).

    >>> round(rdp_epsilon([5.0] * 10, 1.0, delta=1e-5), 4)
    2.8137
    """
    z = np.atleast_1d(np.asarray(noise_multipliers, dtype=float))
    q = np.broadcast_to(np.asarray(sample_rates, dtype=float), z.shape)
    _check_entries(z, q, "rdp_epsilon")
    orders = _alphas(alphas)
    delta = check_real("delta", delta, owner="rdp_epsilon", low=0.0, high=1.0, closed="neither")
    if z.size == 0:  # nothing released: no privacy spent
        return 0.0
    return _eps_from_rdp(_rdp_vector(_compress(zip(z, q, strict=True)), orders), orders, delta)


def gaussian_dp_epsilon(noise_multipliers, *, delta: float) -> float:
    """Exact epsilon of full-batch (q = 1) Gaussian mechanisms: composing N(0, z_t^2) with
    sensitivity 1 is mu-GDP with mu = sqrt(sum z_t^-2) (Dong, Roth, Su 2022); epsilon is the
    root of delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), found by Opacus'
    ``eps_from_mu`` (``opacus.accountants.analysis.gdp``). 0 when delta >= delta(0).

    >>> round(gaussian_dp_epsilon([20.0] * 50, delta=1e-5), 4)
    1.3565
    """
    z = np.atleast_1d(np.asarray(noise_multipliers, dtype=float))
    _check_entries(z, np.ones_like(z), "gaussian_dp_epsilon")
    delta = check_real("delta", delta, owner="gaussian_dp_epsilon", low=0.0, high=1.0, closed="neither")
    if z.size == 0:  # nothing released: no privacy spent
        return 0.0
    _need_opacus()
    from opacus.accountants.analysis.gdp import delta_eps_mu, eps_from_mu

    mu = float(np.sqrt(np.sum(z ** -2.0)))
    if delta_eps_mu(eps=0.0, mu=mu) <= delta:
        return 0.0
    if delta_eps_mu(eps=500.0, mu=mu) > delta:   # outside Opacus' bracket [0, 500]
        fail("noise_multipliers", "gaussian_dp_epsilon",
             "noise large enough for epsilon <= 500 (Opacus' bracket)", f"mu = {mu:.4g}")
    return float(eps_from_mu(mu=mu, delta=delta))


def _check_entries(z: np.ndarray, q: np.ndarray, owner: str) -> None:
    if not np.all(np.isfinite(z)) or np.any(z <= 0):
        fail("noise_multipliers", owner, "finite real numbers in (0, inf)", z.tolist())
    if not np.all(np.isfinite(q)) or np.any(q <= 0) or np.any(q > 1):
        fail("sample_rates", owner, "real numbers in (0, 1]", q.tolist())


@dataclass(frozen=True)
class NoiseSchedule:
    """Per-step noise multipliers ``z_t = z * r_t`` returned by :func:`calibrate`.

    ``noise_multipliers[t]`` is the multiplier of the record term at step ``t`` (sampled
    with ``sample_rate``); ``feedback_noise_multipliers[t]`` (or None) that of the full-batch
    feedback release of ``memory="ef"``. ``epsilon`` is the RDP composition of exactly these.
    """

    noise_multipliers: tuple[float, ...]
    sample_rate: float
    delta: float
    epsilon: float
    target_epsilon: float
    feedback_noise_multipliers: tuple[float, ...] | None = None

    def __len__(self) -> int:
        return len(self.noise_multipliers)

    def __getitem__(self, t: int) -> float:
        return self.noise_multipliers[t]

    def entries(self, t: int) -> list[tuple[float, float]]:
        out = [(self.noise_multipliers[t], self.sample_rate)]
        if self.feedback_noise_multipliers is not None:
            out.append((self.feedback_noise_multipliers[t], 1.0))
        return out


def _shape(shape: str, steps: int, shape_ratio: float) -> np.ndarray:
    if shape == "constant":
        return np.ones(steps)
    # "increasing": more noise late (when DP-C4's thresholds, hence its noise, are small)
    r = np.linspace(1.0, shape_ratio, steps)
    return r if shape == "increasing" else r[::-1].copy()


def calibrate(
    target_epsilon: float,
    *,
    delta: float,
    steps: int,
    sample_rate: float,
    shape: str = "constant",
    shape_ratio: float = 2.0,
    feedback_ratio: float | None = None,
    alphas=None,
    rtol: float = 1e-3,
) -> NoiseSchedule:
    """Smallest scalar z (to relative tolerance ``rtol`` on z) such that the schedule
    ``z_t = z * r_t`` composes to at most ``target_epsilon`` (RDP, add/remove neighbours).

    ``shape`` ("constant", "increasing", "decreasing" linearly by ``shape_ratio``) is the
    budget allocation over steps. ``feedback_ratio``: also charge, every step, a full-batch
    (q = 1) Gaussian with multiplier ``feedback_ratio * z_t`` (the hidden-state feedback term of
    ``memory="ef"``). Bisection on log z; epsilon is monotone decreasing in z (checked).

    >>> s = calibrate(2.0, delta=1e-5, steps=100, sample_rate=0.01)
    >>> s.epsilon <= 2.0 and abs(s.epsilon - 2.0) < 1e-2
    True
    """
    owner = "calibrate"
    target = check_real("target_epsilon", target_epsilon, owner=owner, low=0.0, closed="neither")
    delta = check_real("delta", delta, owner=owner, low=0.0, high=1.0, closed="neither")
    steps = check_int("steps", steps, owner=owner, low=1)
    q = check_real("sample_rate", sample_rate, owner=owner, low=0.0, high=1.0, closed="right")
    check_choice("shape", shape, ("constant", "increasing", "decreasing"), owner=owner)
    shape_ratio = check_real("shape_ratio", shape_ratio, owner=owner, low=0.0, closed="neither")
    if feedback_ratio is not None:
        feedback_ratio = check_real("feedback_ratio", feedback_ratio, owner=owner, low=0.0,
                                    closed="neither")
    rtol = check_real("rtol", rtol, owner=owner, low=0.0, high=0.1, closed="neither")
    orders = _alphas(alphas)
    r = _shape(shape, steps, shape_ratio)

    def eps_of(z: float) -> float:
        return _eps_from_rdp(_rdp_vector(pairs_of(z), orders), orders, delta, warn=False)

    def pairs_of(z: float):
        pairs = [(z * rt, q) for rt in r]
        if feedback_ratio is not None:
            pairs += [(z * feedback_ratio * rt, 1.0) for rt in r]
        return _compress(pairs)

    # Phase 1 (fast, integer orders): z_int with eps_int(z_int) <= target, hence eps(z_int) <= target.
    lo, hi = 1e-3, 1.0
    while _fast_int_eps(pairs_of(hi), delta) > target:
        lo, hi = hi, hi * 2.0
        if hi > 1e7:
            fail("target_epsilon", owner, "reachable with a noise multiplier below 1e7", target)
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if _fast_int_eps(pairs_of(mid), delta) > target else (lo, mid)
    if len(pairs_of(hi)) > 8:
        # many distinct multipliers: Opacus' per-order series costs ~0.3 s per multiplier, so keep
        # the conservative integer-order calibration (exact epsilon still reported below)
        eps = eps_of(hi)
        return NoiseSchedule(
            noise_multipliers=tuple(float(v) for v in hi * r), sample_rate=q, delta=delta, epsilon=eps,
            target_epsilon=target, feedback_noise_multipliers=None if feedback_ratio is None
            else tuple(float(v) for v in hi * r * feedback_ratio))
    # Phase 2 (exact orders, Opacus' formulas): shrink z while the true epsilon allows it.
    hi, lo = hi, hi * 0.9
    while eps_of(lo) <= target:
        hi, lo = lo, lo * 0.9
        if lo < 1e-4:
            break
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        if eps_of(mid) > target:
            lo = mid
        else:
            hi = mid
    eps_hi, eps_lo = eps_of(hi), eps_of(lo)
    if not eps_hi <= target < eps_lo:  # monotonicity of epsilon in z, checked not assumed
        raise RuntimeError(f"calibrate: bisection bracket broke (eps({lo})={eps_lo}, eps({hi})={eps_hi}).")
    z = hi * r
    return NoiseSchedule(
        noise_multipliers=tuple(float(v) for v in z), sample_rate=q, delta=delta,
        epsilon=eps_hi, target_epsilon=target,
        feedback_noise_multipliers=None if feedback_ratio is None
        else tuple(float(v) for v in z * feedback_ratio))


@dataclass
class PrivacyLedger:
    """Running record of every Gaussian release, with a hard stop at the budget.

    ``epsilon_budget``: None tracks without a limit. ``cross_check``: "prv" (Opacus' PRV
    accountant, upper bound) or None. ``num_records``: if given, warns when delta >= 1/n.

    >>> led = PrivacyLedger(delta=1e-5, epsilon_budget=1.0)
    >>> led.charge([(1.0, 0.01)], sensitivity=1.0, noise_std=1.0)
    >>> 0 < led.epsilon() < 1.0
    True
    """

    delta: float
    epsilon_budget: float | None = None
    cross_check: str | None = "prv"
    num_records: int | None = None
    alphas: Sequence[float] | None = None
    rows: list[dict] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        owner = "PrivacyLedger"
        self.delta = check_real("delta", self.delta, owner=owner, low=0.0, high=1.0, closed="neither")
        if self.epsilon_budget is not None:
            self.epsilon_budget = check_real("epsilon_budget", self.epsilon_budget, owner=owner,
                                             low=0.0, closed="neither")
        check_choice("cross_check", self.cross_check, ("prv", None), owner=owner)
        if self.num_records is not None:
            self.num_records = check_int("num_records", self.num_records, owner=owner, low=1)
            if self.delta >= 1.0 / self.num_records:
                warnings.warn(
                    f"delta={self.delta:g} >= 1/n={1.0 / self.num_records:g}: such a delta allows "
                    "releasing a whole record; use delta << 1/n.", UserWarning, stacklevel=3)
        self._orders = _alphas(self.alphas)
        self._rdp = np.zeros(len(self._orders))
        self._cache: dict[tuple[float, float], np.ndarray] = {}
        self.history: list[tuple[float, float, int]] = []  # Opacus' run-length format

    def _curve(self, z: float, q: float) -> np.ndarray:
        key = (float(z), float(q))
        if key not in self._cache:
            self._cache[key] = _rdp_vector([(key[0], key[1], 1)], self._orders)
        return self._cache[key]

    def would_exceed(self, entries: Sequence[tuple[float, float]]) -> bool:
        """True if charging ``entries`` [(z, q), ...] would push epsilon past the budget."""
        if self.epsilon_budget is None:
            return False
        rdp = self._rdp + sum(self._curve(z, q) for z, q in entries)
        return _eps_from_rdp(rdp, self._orders, self.delta, warn=False) > self.epsilon_budget

    def check(self, entries: Sequence[tuple[float, float]]) -> None:
        """Raise :class:`PrivacyBudgetExceeded` if charging ``entries`` would exceed the
        budget; records nothing (the optimizers call it before computing a step)."""
        z = np.asarray([e[0] for e in entries], dtype=float)
        q = np.asarray([e[1] for e in entries], dtype=float)
        _check_entries(z, q, "PrivacyLedger.charge")
        if self.would_exceed(entries):
            raise PrivacyBudgetExceeded(
                f"Privacy budget exhausted: step {len(self.rows)} would raise epsilon above "
                f"{self.epsilon_budget:g} at delta={self.delta:g} (spent so far: "
                f"{self.epsilon():.4g}). No further private step is allowed.")

    def charge(self, entries: Sequence[tuple[float, float]], *, sensitivity, noise_std,
               checked: bool = False) -> None:
        """Record one step's releases; raises :class:`PrivacyBudgetExceeded` (recording
        nothing) if the budget would be exceeded. Call *before* releasing anything.
        ``checked=True`` skips the budget test when :meth:`check` just passed on ``entries``."""
        if not checked:
            self.check(entries)
        z = [float(e[0]) for e in entries]
        q = [float(e[1]) for e in entries]
        for zi, qi in zip(z, q, strict=True):
            self._rdp = self._rdp + self._curve(zi, qi)
            if self.history and self.history[-1][:2] == (float(zi), float(qi)):
                self.history[-1] = (float(zi), float(qi), self.history[-1][2] + 1)
            else:
                self.history.append((float(zi), float(qi), 1))
        self.rows.append({"step": len(self.rows), "z": z, "q": q,
                          "sensitivity": np.atleast_1d(sensitivity).astype(float).tolist(),
                          "noise_std": np.atleast_1d(noise_std).astype(float).tolist()})

    def epsilon(self, delta: float | None = None) -> float:
        """Composed epsilon by Opacus' ``RDPAccountant`` over the exact history."""
        if not self.history:
            return 0.0
        from opacus.accountants import RDPAccountant

        acc = RDPAccountant()
        acc.history = list(self.history)
        d = self.delta if delta is None else delta
        return float(acc.get_epsilon(d, alphas=self._orders))

    def cross_check_epsilon(self, delta: float | None = None, *, eps_error: float = 0.01) -> float:
        """Upper bound from Opacus' PRV accountant (a second, tighter method)."""
        if not self.history:
            return 0.0
        from opacus.accountants import PRVAccountant

        acc = PRVAccountant()
        acc.history = list(self.history)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "not yet properly checked" notice, on every call
            return float(acc.get_epsilon(self.delta if delta is None else delta, eps_error=eps_error))

    @property
    def steps(self) -> int:
        return len(self.rows)

    def state_dict(self) -> dict:
        """Everything needed to resume: settings, budget, history, per-step rows and the
        running RDP curve (copies; ``torch.save``-able)."""
        return {"delta": self.delta, "epsilon_budget": self.epsilon_budget,
                "cross_check": self.cross_check, "num_records": self.num_records,
                "alphas": None if self.alphas is None else [float(a) for a in self.alphas],
                "history": [tuple(h) for h in self.history], "rows": [dict(r) for r in self.rows],
                "rdp": [float(v) for v in self._rdp]}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`: a resumed run continues this ledger's accounting and
        stops at its budget."""
        keys = {"delta", "epsilon_budget", "cross_check", "num_records", "alphas", "history", "rows", "rdp"}
        if not isinstance(state, dict) or not keys <= set(state):
            fail("state", "PrivacyLedger.load_state_dict", f"a dict with the keys {sorted(keys)}",
                 sorted(state) if isinstance(state, dict) else type(state).__name__)
        restored = PrivacyLedger(delta=state["delta"], epsilon_budget=state["epsilon_budget"],
                                 cross_check=state["cross_check"], num_records=None,
                                 alphas=state["alphas"])
        if len(state["rdp"]) != len(restored._orders):
            fail("state", "PrivacyLedger.load_state_dict", f"an RDP curve over {len(restored._orders)} orders",
                 len(state["rdp"]))
        self.delta, self.epsilon_budget = restored.delta, restored.epsilon_budget
        self.cross_check, self.num_records = restored.cross_check, state["num_records"]
        self.alphas, self._orders, self._cache = restored.alphas, restored._orders, {}
        self._rdp = np.asarray(state["rdp"], dtype=float)
        self.history = [(float(z), float(q), int(c)) for z, q, c in state["history"]]
        self.rows = [dict(r) for r in state["rows"]]

    def report(self) -> list[dict]:
        """Per-step table: accountant entries (z_t, q_t), sensitivity Delta_t, noise std s_t."""
        return [dict(r) for r in self.rows]
