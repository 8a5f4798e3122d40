"""Decision spaces, the problem interface and the one counting oracle of ``mo_bandit``.

A decision vector ``x`` has ``n`` positions; each position takes one value from a finite set
(the "decomposed decision vector" of Divide & Learn):

* :class:`Permutation` ``(n)``: ``x`` is a permutation of ``0..n-1`` (tours, schedules);
* :class:`Binary` ``(n, weights=, capacity=)`` or ``feasible=``: ``x`` in ``{0,1}^n``, optionally
  under a knapsack constraint ``weights @ x <= capacity`` or a user feasibility callback that
  must be *monotone* (switching a 1 to 0 never breaks feasibility);
* :class:`Categorical` ``([options_0, options_1, ...])``: position ``p`` takes an index into its
  option list (``x[p] in range(len(options_p))``).

An :class:`MOProblem` couples a space with a vectorised-or-not objective ``f(x) -> (m,)``. Every
method in this package (D&L and every baseline) evaluates through one :class:`Oracle`, which
counts distinct evaluations against the budget (cache hits are free), converts ``"max"``
objectives to minimisation, rejects NaN/inf and wrong shapes, and records every evaluated point
in order (so the archive and the hypervolume trace come from the same record for all methods).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optzoo._core.validation import check_choice, check_int, check_type, fail

__all__ = ["Permutation", "Binary", "Categorical", "MOProblem", "Oracle", "BudgetExhausted",
           "as_problem"]

OWNER = "divide_and_learn"


class BudgetExhausted(RuntimeError):
    """Raised by :class:`Oracle` when a new (uncached) evaluation would exceed the budget."""


class Permutation:
    """Permutations of ``0..n-1``; value ``v`` at position ``p`` means "visit item v p-th"."""

    kind = "permutation"

    def __init__(self, n: int):
        self.n = check_int("n", n, owner="Permutation", low=1)
        self.n_values = self.n

    def random(self, rng: np.random.Generator) -> np.ndarray:
        return rng.permutation(self.n)

    def contains(self, x: np.ndarray) -> bool:
        return x.shape == (self.n,) and np.array_equal(np.sort(x), np.arange(self.n))

    def __repr__(self) -> str:
        return f"Permutation({self.n})"


class Binary:
    """Binary vectors, optionally under ``weights @ x <= capacity`` or a monotone ``feasible``."""

    kind = "binary"

    def __init__(self, n: int, *, weights: Sequence[float] | None = None,
                 capacity: float | None = None, feasible: Callable[[np.ndarray], bool] | None = None):
        self.n = check_int("n", n, owner="Binary", low=1)
        self.n_values = 2
        if (weights is None) != (capacity is None):
            fail("capacity", "Binary", "given together with 'weights'", capacity)
        self.weights = None if weights is None else np.asarray(weights, dtype=float)
        if self.weights is not None:
            if self.weights.shape != (self.n,) or not np.isfinite(self.weights).all() or (self.weights < 0).any():
                fail("weights", "Binary", f"a finite non-negative array of shape ({self.n},)", weights)
            self.capacity = float(capacity)
            if not np.isfinite(self.capacity) or self.capacity < 0:
                fail("capacity", "Binary", "a finite real number in [0, inf)", capacity)
        else:
            self.capacity = None
        if feasible is not None and not callable(feasible):
            fail("feasible", "Binary", "a callable x -> bool", feasible, exc=TypeError)
        self.feasible_fn = feasible

    def feasible(self, x: np.ndarray) -> bool:
        if self.weights is not None and float(self.weights @ x) > self.capacity + 1e-12:
            return False
        return True if self.feasible_fn is None else bool(self.feasible_fn(np.asarray(x)))

    def random(self, rng: np.random.Generator) -> np.ndarray:
        # Random greedy fill in random order: feasible by construction for monotone constraints.
        x = np.zeros(self.n, dtype=np.int64)
        for p in rng.permutation(self.n):
            if rng.random() < 0.5:
                x[p] = 1
                if not self.feasible(x):
                    x[p] = 0
        return x

    def contains(self, x: np.ndarray) -> bool:
        return x.shape == (self.n,) and bool(np.isin(x, (0, 1)).all()) and self.feasible(x)

    def __repr__(self) -> str:
        cap = "" if self.capacity is None else f", capacity={self.capacity:g}"
        return f"Binary({self.n}{cap})"


class Categorical:
    """Position ``p`` takes an index into ``options[p]`` (the option labels are kept for users)."""

    kind = "categorical"

    def __init__(self, options: Sequence[Sequence[Any]]):
        if isinstance(options, (str, bytes)) or not isinstance(options, Sequence):
            fail("options", "Categorical", "a sequence of option lists", options, exc=TypeError)
        if len(options) == 0:
            fail("options", "Categorical", "a non-empty sequence of option lists", options)
        sizes = []
        for p, opt in enumerate(options):
            if isinstance(opt, (str, bytes)) or not isinstance(opt, Sequence) or len(opt) == 0:
                fail(f"options[{p}]", "Categorical", "a non-empty list of options", opt)
            sizes.append(len(opt))
        self.options = [list(o) for o in options]
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.n = len(sizes)
        self.n_values = int(self.sizes.max())

    def random(self, rng: np.random.Generator) -> np.ndarray:
        return (rng.random(self.n) * self.sizes).astype(np.int64)

    def contains(self, x: np.ndarray) -> bool:
        return x.shape == (self.n,) and bool(((x >= 0) & (x < self.sizes)).all())

    def decode(self, x: np.ndarray) -> list:
        return [self.options[p][int(v)] for p, v in enumerate(x)]

    def __repr__(self) -> str:
        return f"Categorical(n={self.n}, sizes={self.sizes.tolist()})"


SPACES = (Permutation, Binary, Categorical)


@dataclass
class MOProblem:
    """A multi-objective combinatorial problem.

    ``evaluate(x) -> (m,)`` objective vector in the problem's own sense (``sense[i]`` is
    ``"min"`` or ``"max"``). ``ref_point`` / ``ideal_point`` (in the problem's own sense) fix the
    hypervolume ratio ``HV / prod|r - z|``. ``scale`` divides each objective inside D&L's weighted
    sum (useful when objectives have different units). ``expected`` optionally gives the noise-free
    objective (used for regret). ``coords`` is an optional (n, 2) array of positions used by the
    metric re-decomposition groups (nearest neighbours), as in the official TSP code.
    """

    space: Any
    evaluate: Callable[[np.ndarray], Any]
    n_objectives: int
    sense: tuple[str, ...] = ()
    name: str = "problem"
    ref_point: np.ndarray | None = None
    ideal_point: np.ndarray | None = None
    scale: np.ndarray | None = None
    coords: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        check_type("space", self.space, SPACES, owner="MOProblem",
                   what="a Permutation, Binary or Categorical space")
        self.n_objectives = check_int("n_objectives", self.n_objectives, owner="MOProblem", low=1)
        if not callable(self.evaluate):
            fail("evaluate", "MOProblem", "a callable x -> objective vector", self.evaluate, exc=TypeError)
        if not self.sense:
            self.sense = ("min",) * self.n_objectives
        if isinstance(self.sense, str):  # sense="max": the same sense for every objective
            self.sense = (self.sense,) * self.n_objectives
        self.sense = tuple(self.sense)
        if len(self.sense) != self.n_objectives:
            fail("sense", "MOProblem", f"a tuple of {self.n_objectives} 'min'/'max' strings", self.sense)
        for s in self.sense:
            check_choice("sense", s, ("min", "max"), owner="MOProblem")
        self.sign = np.array([1.0 if s == "min" else -1.0 for s in self.sense])
        for name in ("ref_point", "ideal_point", "scale"):
            v = getattr(self, name)
            if v is not None:
                v = np.asarray(v, dtype=float)
                if v.shape != (self.n_objectives,) or not np.isfinite(v).all():
                    fail(name, "MOProblem", f"a finite array of shape ({self.n_objectives},)", v)
                setattr(self, name, v)

    @property
    def n(self) -> int:
        return self.space.n


def _pymoo_problem(problem, space, owner):
    """Wrap a pymoo ``Problem``: integer/binary variables with bounds, no constraints."""
    xl = np.asarray(problem.xl, dtype=float)
    xu = np.asarray(problem.xu, dtype=float)
    if getattr(problem, "n_ieq_constr", 0) or getattr(problem, "n_eq_constr", 0):
        fail("problem", owner, "a pymoo Problem without constraints (encode feasibility in the "
             "space, e.g. Binary(n, weights=, capacity=))", type(problem).__name__)
    if space is None:
        if not (np.isfinite(xl).all() and np.isfinite(xu).all()):
            fail("problem", owner, "a pymoo Problem with finite integer bounds (or pass space=)",
                 type(problem).__name__)
        if np.all(xl == 0) and np.all(xu == 1):
            space = Binary(problem.n_var)
        else:
            space = Categorical([list(range(int(lo), int(hi) + 1)) for lo, hi in zip(xl, xu, strict=True)])
    offset = xl.astype(np.int64) if isinstance(space, Categorical) else 0

    def evaluate(x):
        out = problem.evaluate((np.asarray(x) + offset)[None, :], return_as_dictionary=True)
        return np.asarray(out["F"], dtype=float).reshape(-1)

    return MOProblem(space, evaluate, problem.n_obj, name=type(problem).__name__)


def as_problem(problem, *, space=None, n_objectives=None, sense=None, owner=OWNER) -> MOProblem:
    """Accept an :class:`MOProblem`, a pymoo ``Problem`` or a plain callable ``f(x) -> (m,)``."""
    if isinstance(problem, MOProblem):
        if space is not None or n_objectives is not None:
            if n_objectives is not None and n_objectives != problem.n_objectives:
                fail("n_objectives", owner, f"equal to the problem's {problem.n_objectives}", n_objectives)
        if sense is not None:
            given = (sense,) * problem.n_objectives if isinstance(sense, str) else tuple(sense)
            if given != problem.sense:
                fail("sense", owner, f"None or the MOProblem's own sense {problem.sense}", sense)
        return problem
    try:
        from pymoo.core.problem import Problem as PymooProblem
    except ImportError:  # pragma: no cover - pymoo is an installed dependency here
        PymooProblem = ()
    if PymooProblem and isinstance(problem, PymooProblem):
        prob = _pymoo_problem(problem, space, owner)
        if n_objectives is not None and n_objectives != prob.n_objectives:
            fail("n_objectives", owner, f"equal to the pymoo problem's n_obj={prob.n_objectives}",
                 n_objectives)
        return prob
    if callable(problem):
        if space is None:
            fail("space", owner, "a Permutation, Binary or Categorical space when 'problem' is a "
                 "callable", space, exc=TypeError)
        check_type("space", space, SPACES, owner=owner, what="a Permutation, Binary or Categorical space")
        if n_objectives is None:
            fail("n_objectives", owner, "an int >= 2 when 'problem' is a callable", n_objectives,
                 exc=TypeError)
        return MOProblem(space, problem, n_objectives,
                         sense=sense if isinstance(sense, str) else tuple(sense or ()),
                         name=getattr(problem, "__name__", "callable"))
    raise TypeError(f"The 'problem' argument of {owner} must be an MOProblem, a pymoo Problem or "
                    f"a callable x -> objective vector. Got {type(problem).__name__}.")


class Oracle:
    """The one place where objectives are evaluated and counted.

    ``oracle(x)`` returns the objective vector *in minimisation form* (``max`` objectives
    negated). A distinct ``x`` costs one evaluation; a repeated ``x`` is served from the cache
    for free. When ``nfev == budget`` a new ``x`` raises :class:`BudgetExhausted`, so the budget
    is never exceeded. ``X``/``F`` hold every distinct evaluated point in evaluation order.
    """

    def __init__(self, problem: MOProblem, budget: int, *, owner: str = OWNER):
        self.problem = problem
        self.budget = check_int("budget", budget, owner=owner, low=1)
        self.owner = owner
        self.cache: dict[bytes, np.ndarray] = {}
        self.X: list[np.ndarray] = []
        self.F: list[np.ndarray] = []
        self.calls = 0
        # A noisy problem must be re-sampled on every call, so nothing is served from cache.
        self.use_cache = not problem.info.get("noisy", False)

    @property
    def nfev(self) -> int:
        return len(self.F)

    @property
    def remaining(self) -> int:
        return self.budget - len(self.F)

    def __call__(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.int64)
        key = x.tobytes()
        self.calls += 1
        hit = self.cache.get(key) if self.use_cache else None
        if hit is not None:
            return hit
        if len(self.F) >= self.budget:
            raise BudgetExhausted(f"evaluation budget of {self.budget} used")
        raw = self.problem.evaluate(x.copy())
        m = self.problem.n_objectives
        try:
            f = np.asarray(raw, dtype=float).reshape(-1) if np.ndim(raw) <= 1 else None
        except (TypeError, ValueError):
            raise TypeError(f"The 'problem' argument of {self.owner} must return an objective "
                            f"vector of {m} real numbers. Got {raw!r:.80} at x={x.tolist()}.") from None
        if f is None or f.shape != (m,):
            raise ValueError(f"The 'problem' argument of {self.owner} must return an objective "
                             f"vector of shape ({m},). Got shape {np.shape(raw)} at x={x.tolist()}.")
        if not np.isfinite(f).all():
            raise ValueError(f"The 'problem' argument of {self.owner} must return finite "
                             f"objectives. Got {f.tolist()} at x={x.tolist()}.")
        f = f * self.problem.sign
        f.setflags(write=False)
        self.cache[key] = f
        self.X.append(x.copy())
        self.F.append(f)
        return f

    def evaluated(self) -> tuple[np.ndarray, np.ndarray]:
        """(X, F) of every distinct evaluation, F in minimisation form."""
        n, m = self.problem.n, self.problem.n_objectives
        if not self.F:
            return np.zeros((0, n), dtype=np.int64), np.zeros((0, m))
        return np.stack(self.X), np.stack(self.F)
