"""THE verdict rules: every paper's ``judge`` decides through this module and no other.

The unit of replication is the seed. A room turns each seed's run into one number per part of
a claim (instances inside a seed are aggregated within the seed; a deterministic instance
repeated across seeds is passed through :func:`deterministic` and counts once), then calls
:func:`judge` with the :class:`~optzoo.repro.claim.Claim`. The rules:

* ``greater`` (``less``): Student-t interval of the mean over seeds at ``level`` (two-sided).
  Holds when it lies wholly above (below) the threshold, fails when it lies wholly on the
  other side, undecided otherwise. At a true mean equal to the threshold the chance of a
  false "holds" is ``(1 - level) / 2``.
* ``noninferior``: ``greater`` against ``threshold - margin``.
* ``equivalent``: two one-sided tests at ``alpha = 1 - level``: holds when the
  ``1 - 2 alpha`` interval lies inside ``threshold +- margin`` (false "holds" at the margin
  at most ``alpha``); fails when the ``level`` interval lies wholly outside it.
* ``all`` (a universal statement): holds when it held on every instance, fails on any
  counterexample.
* Several parts (tasks, datasets, regimes): every part must hold for the claim to hold
  (an intersection-union test: no correction is needed for that side); the claim fails when
  any part lies wholly on the wrong side of an interval at the Bonferroni level
  ``1 - (1 - level) / k``; otherwise it is undecided. Each part keeps its own verdict, so a
  pooled claim never hides a task where the method is reliably worse.

A deterministic part (one exact value) holds or fails by the side of the threshold it is on
(a tie is undecided, and no number of seeds decides it). Fewer than two seeds of a random
quantity decide nothing. A part with a non-finite value (a diverged run) is marked and left
undecided; the claim's other parts, and every other claim, are judged as usual. A decided part
reports its power at its own estimate (:func:`_power`).

Rooms on records (:mod:`optzoo.repro.evidence`) are judged by :func:`judge_claims`: every claim
from its declared evidence, then again on its control's evidence; :func:`check_claims` refuses
a room that breaks the contract, and :func:`headline_status` reads a paper's headline from the
verdicts of the claims ``papers.py`` names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from optzoo._core.stats import mean_ci
from optzoo.repro.claim import Claim, Part, Verdict

__all__ = ["Sample", "check_claims", "combine", "deterministic", "headline_status", "judge", "judge_claims",
           "paired", "rule_text", "seeds_to_decide"]

_MAX_SEEDS = 100_000


@dataclass(frozen=True)
class Sample:
    """Per-unit values of one part. ``deterministic``: one exact value, counted once."""

    values: tuple[float, ...]
    deterministic: bool = False


def deterministic(values: Sequence[float], *, rtol: float = 1e-9, atol: float = 1e-12) -> Sample:
    """One instance whose value is the same in every seed (a named graph, a fixed dataset with a
    deterministic method): counted once. Raises if the seeds disagree, since then it is not."""
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("The 'values' argument of deterministic must hold at least one value. Got none.")
    if not np.allclose(x, x[0], rtol=rtol, atol=atol):
        raise ValueError(
            "The 'values' argument of deterministic must be equal across seeds (it is one "
            f"instance counted once). Got {x.tolist()!r}."
        )
    return Sample((float(x[0]),), deterministic=True)


def paired(a: Sequence[float], b: Sequence[float], transform: str = "diff") -> np.ndarray:
    """Per-seed paired effect of ``a`` over ``b``: ``"diff"`` (a - b) or ``"logratio"``
    (log(a / b), for positive metrics). Pairs must share the seed (same data and budget)."""
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"The 'a' and 'b' arguments of paired must have equal lengths. Got {x.size} and {y.size}.")
    if transform == "diff":
        return x - y
    if transform == "logratio":
        if (x <= 0).any() or (y <= 0).any():
            raise ValueError("The 'transform' argument 'logratio' of paired needs positive values. "
                             f"Got a={x.tolist()!r}, b={y.tolist()!r}.")
        return np.log(x) - np.log(y)
    raise ValueError(f"The 'transform' argument of paired must be 'diff' or 'logratio'. Got {transform!r}.")


def _boundary(claim: Claim) -> float:
    if claim.direction == "noninferior":
        return claim.threshold - claim.margin
    return claim.threshold


def rule_text(claim: Claim, level: float = 0.95, parts: int = 1) -> str:
    """The decision rule of ``claim`` in words (generated, so each threshold is written once)."""
    holds, fails, undecided = claim.words
    pct = f"{100 * level:g}%"
    unit = claim.unit
    if claim.direction == "all":
        text = (f"{holds} when the statement holds on every {unit}; {fails} on any counterexample")
    elif claim.direction == "equivalent":
        lo, hi = claim.threshold - claim.margin, claim.threshold + claim.margin
        text = (f"{holds} when the {100 * (2 * level - 1):g}% t-interval of the mean over {unit}s "
                f"lies inside ({lo:g}, {hi:g}) (two one-sided tests at {100 * (1 - level):g}%); "
                f"{fails} when the {pct} interval lies wholly outside it")
    else:
        side, other = ("above", "below") if claim.direction in ("greater", "noninferior") else ("below", "above")
        b = _boundary(claim)
        what = (f"{claim.threshold:g} - margin {claim.margin:g} = {b:g}" if claim.direction == "noninferior"
                else f"{b:g}")
        text = (f"{holds} when the {pct} t-interval of the mean over {unit}s lies {side} {what}; "
                f"{fails} when it lies wholly {other}")
    text += f"; {undecided} otherwise"
    if parts > 1 and claim.direction == "all":
        text += f". {parts} parts: every part must hold on every {unit}"
    elif parts > 1:
        text += (f". {parts} parts: every part must hold; a part wholly on the wrong side of its "
                 f"{100 * (1 - (1 - level) / parts):.4g}% (Bonferroni) interval fails the claim")
    return text


def seeds_to_decide(sd: float, distance: float, q: float, n: int) -> int | None:
    """Smallest number of seeds whose t-interval half-width (quantile ``q``) drops below
    ``distance``, if the spread stays ``sd``; ``None`` when no number would (distance 0)."""
    if not (distance > 0 and sd > 0 and math.isfinite(sd)):
        return None
    from scipy import stats

    # the t quantile exceeds the normal one, so the normal answer is a lower bound to start from
    start = max(n, 2, math.ceil((stats.norm.ppf(q) * sd / distance) ** 2))
    while start <= _MAX_SEEDS:
        m = np.arange(start, min(start + 512, _MAX_SEEDS + 1))
        ok = np.nonzero(stats.t.ppf(q, m - 1) * sd / np.sqrt(m) < distance)[0]
        if ok.size:
            return int(m[ok[0]])
        start += 512
    return None


def _as_sample(evidence) -> Sample:
    if isinstance(evidence, Sample):
        return evidence
    x = np.asarray(evidence, dtype=float).ravel()
    return Sample(tuple(float(v) for v in x))


def _judge_part(claim: Claim, name: str, evidence, level: float, k: int) -> tuple[Part, float | None, int | None]:
    """One part: (Part, half-width if undecided, seeds to decide if undecided)."""
    holds, fails, undecided = claim.words
    if claim.direction == "all":
        flags = [bool(h) for h in np.asarray(evidence, dtype=bool).ravel()]
        n, held = len(flags), sum(flags)
        v = undecided if n == 0 else (holds if held == n else fails)
        frac = held / n if n else float("nan")
        return Part(name, frac, frac, frac, n, v, level=None, held=held), None, None

    s = _as_sample(evidence)
    x = np.asarray(s.values, dtype=float)
    if x.size == 0:
        raise ValueError(f"Claim {claim.id!r} part {name!r} has no values to judge.")
    bad = int((~np.isfinite(x)).sum())
    if bad:  # a diverged run: the part is marked and explained, the claim's other parts judged
        est = float("nan")
        return Part(name, est, est, est, int(x.size), undecided, level=None if s.deterministic else level,
                    nonfinite=bad), None, None
    est = float(x.mean())
    b = _boundary(claim)
    if s.deterministic or x.size == 1:
        if not s.deterministic:  # one seed of a random quantity: no interval, no decision
            return Part(name, est, est, est, 1, undecided, level=level), None, None
        lo_m, hi_m = claim.threshold - claim.margin, claim.threshold + claim.margin
        if claim.direction == "equivalent":
            v = holds if lo_m < est < hi_m else (fails if (est < lo_m or est > hi_m) else undecided)
        elif claim.direction == "less":
            v = holds if est < b else (fails if est > b else undecided)
        else:
            v = holds if est > b else (fails if est < b else undecided)
        return Part(name, est, est, est, 1, v, level=None), None, None

    n = int(x.size)
    sd = float(x.std(ddof=1))
    alpha = 1.0 - level
    q = 1.0 - alpha / 2.0                 # two-sided interval at `level`
    q_adj = 1.0 - alpha / (2.0 * k)       # Bonferroni for the wrong-side decision
    iv, adj = mean_ci(x, level=level), mean_ci(x, level=1.0 - alpha / k)
    lo, hi, alo, ahi = iv.low, iv.high, adj.low, adj.high
    shown_level = level
    if claim.direction == "equivalent":
        q_eq = 1.0 - alpha                # 1 - 2 alpha two-sided interval = TOST at alpha
        eq = mean_ci(x, level=1.0 - 2.0 * alpha)
        lo, hi = eq.low, eq.high
        shown_level = 1.0 - 2.0 * alpha
        lo_m, hi_m = claim.threshold - claim.margin, claim.threshold + claim.margin
        if lo > lo_m and hi < hi_m:
            v = holds
        elif alo > hi_m or ahi < lo_m:
            v = fails
        else:
            v = undecided
        inside = abs(est - claim.threshold) < claim.margin
        dist, qq = ((claim.margin - abs(est - claim.threshold), q_eq) if inside
                    else (abs(est - claim.threshold) - claim.margin, q_adj))
    elif claim.direction == "less":
        v = holds if hi < b else (fails if alo > b else undecided)
        dist, qq = abs(est - b), (q if est < b else q_adj)
    else:
        v = holds if lo > b else (fails if ahi < b else undecided)
        dist, qq = abs(est - b), (q if est > b else q_adj)
    power = None if v == undecided else _power(claim, v == holds, est, sd, n, level, k)
    part = Part(name, est, lo, hi, n, v, level=shown_level,
                adj_low=alo if k > 1 else None, adj_high=ahi if k > 1 else None, sd=sd, power=power)
    if v != undecided:
        return part, None, None
    return part, (hi - lo) / 2.0, seeds_to_decide(sd, dist, qq, n)


def _power(claim: Claim, held: bool, est: float, sd: float, n: int, level: float, k: int) -> float:
    """The chance that a new set of ``n`` seeds decides this part the same way, if the true
    mean were the estimate and the spread ``sd`` (noncentral t): how likely the verdict holds."""
    from scipy import stats

    if not sd > 1e-12 * max(1.0, abs(est)):  # equal up to rounding in every seed: it repeats
        return 1.0
    alpha = 1.0 - level
    se, df = sd / math.sqrt(n), n - 1

    def guard(p: float) -> float:  # the noncentral t loses precision far in its tail
        return p if math.isfinite(p) else 1.0

    def above(bound: float, q: float) -> float:  # P(lower end of the q-interval > bound)
        return guard(float(stats.nct.sf(stats.t.ppf(q, df), df, (est - bound) / se)))

    def below(bound: float, q: float) -> float:  # P(upper end of the q-interval < bound)
        return guard(float(stats.nct.cdf(-stats.t.ppf(q, df), df, (est - bound) / se)))

    lo_m, hi_m = claim.threshold - claim.margin, claim.threshold + claim.margin
    if claim.direction == "equivalent":
        if held:
            return max(0.0, above(lo_m, 1.0 - alpha) + below(hi_m, 1.0 - alpha) - 1.0)
        q = 1.0 - alpha / (2.0 * k)
        return above(hi_m, q) if est > hi_m else below(lo_m, q)
    b = _boundary(claim)
    q = 1.0 - alpha / 2.0 if held else 1.0 - alpha / (2.0 * k)
    upward = (claim.direction != "less") == held
    return above(b, q) if upward else below(b, q)


def combine(claim: Claim, verdicts: Sequence[str]) -> str:
    """The one combination rule: all parts hold -> holds; any part fails -> fails; else undecided."""
    holds, fails, undecided = claim.words
    if verdicts and all(v == holds for v in verdicts):
        return holds
    if any(v == fails for v in verdicts):
        return fails
    return undecided


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def _describe(claim: Claim, parts: Sequence[Part]) -> str:
    def one(p: Part) -> str:
        if claim.direction == "all":
            return f"held on {p.held}/{p.n} {claim.unit}s"
        if p.nonfinite:
            return (f"non-finite (NaN or infinite: a diverged run) on {p.nonfinite} of {p.n} "
                    f"{claim.unit}s, so this part is not judged")
        if p.level is None:
            return f"{_fmt(p.estimate)} (exact, deterministic: counted once)"
        if p.n < 2:
            return f"{_fmt(p.estimate)} (one seed: no interval)"
        return f"{_fmt(p.estimate)} [{_fmt(p.low)}, {_fmt(p.high)}] ({100 * p.level:g}% t, n={p.n})"

    if len(parts) == 1 and parts[0].name == "":
        return f"{claim.metric}: {one(parts[0])}"
    shown = "; ".join(f"{p.name}: {one(p)} {p.verdict}" for p in parts[:8])
    more = f"; ... {len(parts) - 8} more" if len(parts) > 8 else ""
    return f"{claim.metric}. {shown}{more}"


def _unjudged(claim: Claim, why: str, level: float, *, measured: bool,
              numbers: Mapping | None = None) -> Verdict:
    """An undecided verdict with no parts: not measured at this scale (``measured=False``, not
    counted), or measured but its evidence could not be read (counted as undecided)."""
    return Verdict(
        claim=claim.id, verdict=claim.words[2], kind=claim.kind, numbers=dict(numbers or {}),
        summary=f"{claim.metric}: {why}", rule=rule_text(claim, level), level=None,
        direction=claim.direction, threshold=None if claim.direction == "all" else _boundary(claim),
        margin=claim.margin if claim.direction == "equivalent" else None, measured=measured)


def judge(claim: Claim, evidence, *, note: str = "", numbers: Mapping | None = None,
          level: float = 0.95) -> Verdict:
    """Judge ``claim`` on ``evidence`` and return its :class:`Verdict`.

    ``evidence``: per-seed values of one part (a sequence, or a :class:`Sample` from
    :func:`deterministic`), or a mapping ``part name -> per-seed values``. For direction
    ``"all"``, booleans per instance (or a mapping of them). ``None``: the claim was not
    measured at this scale (undecided and not counted; say why in ``note``). ``note`` is appended to the
    generated summary; ``numbers`` adds key numbers to the report.
    """
    if not 0.5 < level < 1.0:
        raise ValueError(f"The 'level' argument of judge must be in (0.5, 1). Got {level!r}.")
    if evidence is None:
        return _unjudged(claim, "not measured at this scale" + (f". {note}" if note else ""), level,
                         measured=False, numbers=numbers)
    items = list(evidence.items()) if isinstance(evidence, Mapping) else [("", evidence)]
    if not items:
        raise ValueError(f"Claim {claim.id!r} needs at least one part to judge. Got an empty mapping.")
    k = len(items)
    judged = [_judge_part(claim, str(name), ev, level, k) for name, ev in items]
    parts = tuple(p for p, _, _ in judged)
    verdict = combine(claim, [p.verdict for p in parts])
    undecided_parts = [(h, m) for (p, h, m) in judged if h is not None]
    half = max((h for h, _ in undecided_parts), default=None)
    # an exact tie (a deterministic part on the threshold) or a non-finite part is undecided
    # whatever the number of seeds: no "about N seeds would decide it" for such a claim
    stuck = [p for p in parts if p.verdict == claim.words[2] and (p.level is None or p.nonfinite)
             and claim.direction != "all"]
    need = None
    if verdict == claim.words[2] and undecided_parts and not stuck:
        needs = [m for _, m in undecided_parts]
        need = None if any(m is None for m in needs) else max(needs)
    powers = [p.power for p in parts if p.power is not None]
    summary = _describe(claim, parts) + (f". {note}" if note else "")
    nums = {"estimate": parts[0].estimate} if k == 1 else {p.name: p.estimate for p in parts}
    nums.update(dict(numbers or {}))
    return Verdict(
        claim=claim.id, verdict=verdict, summary=summary, numbers=nums, kind=claim.kind,
        parts=parts, rule=rule_text(claim, level, k), level=level if claim.direction != "all" else None,
        threshold=None if claim.direction == "all" else _boundary(claim) if claim.direction != "equivalent"
        else claim.threshold,
        margin=claim.margin if claim.direction == "equivalent" else None,
        direction=claim.direction, half_width=half, seeds_needed=need,
        power=min(powers) if powers and verdict != claim.words[2] else None,
        tie=verdict == claim.words[2] and any(p.level is None and not p.nonfinite for p in stuck),
    )


#: Where a claim of kind ``claim`` may come from: a statement of the paper (its abstract, a
#: section of the paper) or of its official code. The spec, the reviews and our own
#: derivations give ``finding``s and ``check``s.
PAPER_SOURCES = ("abstract", "paper §", "paper section", "official code")


def check_claims(claims: Sequence[Claim]) -> None:
    """Refuse a reproduction on records whose claims break the contract: every claim declares
    its evidence; every ``claim`` cites the paper (:data:`PAPER_SOURCES`) and has a control
    whose substituted arms are arms its evidence reads; ids are unique."""
    ids = [c.id for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"Claim ids must be unique. Got duplicates {dup}.")
    for c in claims:
        if c.evidence is None:
            raise ValueError(f"Claim {c.id!r} must declare its 'evidence' (optzoo.repro.evidence). Got None.")
        if c.kind != "claim":
            continue
        if not c.source.strip().lower().startswith(PAPER_SOURCES):
            raise ValueError(f"Claim {c.id!r} of kind 'claim' must cite the paper: its 'source' must start "
                             f"with one of {PAPER_SOURCES}. Got {c.source!r} (make it a 'finding' if it "
                             "comes from the spec, a review or our derivation).")
        if c.control is None:
            raise ValueError(f"Claim {c.id!r} of kind 'claim' needs a 'control' (the experiment with the "
                             "paper's credited mechanism removed). Got None.")
        unused = sorted(set(c.control.arms) - set(c.evidence.arms))
        if unused:
            raise ValueError(f"The control of claim {c.id!r} substitutes arms its evidence does not read: "
                             f"{unused} (it reads {list(c.evidence.arms)}).")


def judge_claims(claims: Sequence[Claim], per_seed, *, scale: str | None = None,
                 notes: Mapping[str, str] | None = None, level: float = 0.95) -> list[Verdict]:
    """Judge every claim of a reproduction on records: its evidence, then, for a claim with a
    control, the same claim on the control's evidence (same units, same seeds). A claim whose
    evidence cannot be read, or is not measured at ``scale``, is undecided with the reason;
    one claim's failure never takes the others with it."""
    from dataclasses import replace

    from optzoo.repro.evidence import as_records

    per_seed = [as_records(seed) for seed in per_seed]
    notes = dict(notes or {})
    out = []
    for c in claims:
        if c.scales and scale is not None and scale not in c.scales:
            v = judge(c, None, note=f"measured only at {' and '.join(c.scales)}", level=level)
            out.append(replace(v, measured=False))
            continue
        try:
            v = judge(c, c.evidence.collect(per_seed), note=notes.get(c.id, ""), level=level)
        except Exception as exc:  # noqa: BLE001 - reported on the claim, the others still judged
            out.append(_unjudged(c, f"its evidence could not be read: {type(exc).__name__}: {exc}", level,
                                 measured=True))
            continue
        if c.control is not None:
            try:
                cv = judge(c, c.evidence.collect(per_seed, c.control.arms), level=level)
            except Exception as exc:  # noqa: BLE001
                cv = _unjudged(c, f"the control's evidence could not be read: {type(exc).__name__}: {exc}",
                               level, measured=True)
            v = replace(v, control=cv, control_removes=c.control.describe())
        out.append(v)
    return out


#: The four words of a headline's status.
HEADLINE_WORDS = ("reproduced", "not reproduced", "undecided", "untested at this scale")


def headline_status(verdicts: Sequence[Verdict], headline: Sequence[str]) -> str | None:
    """The status of a paper's headline from the verdicts of the claims that test it:
    ``not reproduced`` if any of them is; ``untested at this scale`` if any is not measured
    here; ``reproduced`` only if every one is reproduced and survives its control; else
    ``undecided`` (inconclusive, no control, or reproduced under its control too).
    ``None`` when the paper names no headline claims."""
    if not headline:
        return None
    by_id = {v.claim: v for v in verdicts}
    vs = [by_id[h] for h in headline if h in by_id]
    if len(vs) < len(headline):
        return "untested at this scale"
    if any(v.verdict == "not reproduced" for v in vs):
        return "not reproduced"
    if any(not v.measured for v in vs):
        return "untested at this scale"
    if all(v.status == "reproduced" for v in vs):
        return "reproduced"
    return "undecided"
