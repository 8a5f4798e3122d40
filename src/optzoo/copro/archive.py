"""A running feasible Pareto archive and the CoPro PF-progress flag.

Fidelity **reconstructed, INFERRED**: the CoPro abstract says that the E-step "promotes feasible
Pareto-front progress"; the flag and the archive below are our reading of it (spec section 1.3:
:math:`p_i = 1[i\\ \\text{feasible, non-dominated in its group, not dominated by a running
feasible archive}\\ A]`). Nothing here comes from the paper's text or code.

Definitions (objectives turned to maximisation by ``senses``; sample :math:`i` of a group has
objectives :math:`F_i` and constraints :math:`g_i`, feasible iff every :math:`g_{ij}\\le 0`):

* Pareto dominance is **exact** (no tie tolerance): :math:`x\\succ y` iff :math:`x_k\\ge y_k`
  for every :math:`k` and :math:`x_k>y_k` for some :math:`k`. The group statistics' tolerance
  :math:`\\delta_k=\\text{tie\\_tol}\\cdot s_k` is tied to one group's robust scale
  :math:`s_k`; the archive mixes points from many groups, where that scale is not defined, and
  tolerance dominance is not transitive (the "non-dominated set" would depend on the order of
  the updates). Exact dominance is invariant to strictly increasing maps of each objective.
* For a context key :math:`c` with archive :math:`A_c`, the PF-progress flag of sample
  :math:`i` of a group with that key is

  .. math::

      p_i = 1\\big[i\\in\\mathcal F\\ \\wedge\\ \\nexists j\\in\\mathcal F\\ \\text{of the group}:
      F_j\\succ F_i\\ \\wedge\\ \\nexists a\\in A_c: a\\succeq F_i\\big],

  where :math:`a\\succeq F_i` is *weak* dominance (:math:`a_k\\ge F_{ik}\\ \\forall k`). Only
  feasible group members count (by Deb's rules an infeasible sample never beats a feasible
  one). Against the archive the test is weak, so a sample that merely repeats an archived point
  is not progress: :math:`p_i=1` iff adding :math:`F_i` to :math:`A_c` strictly enlarges the
  region :math:`A_c` dominates. Two equal samples in one group are both flagged (neither
  dominates the other; near ties are the ambiguity statistic's job).
* :meth:`ParetoArchive.update` replaces :math:`A_c` by the non-dominated set of
  :math:`A_c\\cup\\{F_i: i\\in\\mathcal F\\}` (duplicates kept once, the older copy), so
  without ``max_size`` the archive is exactly the set of non-dominated feasible objective
  vectors seen so far for that key. With ``max_size`` the point with the smallest crowding
  distance (NSGA-II's, recomputed after each removal; the extremes of every objective have
  infinite distance and are kept; ties drop the older point) is removed until the size fits;
  a point dominated only by a pruned point may then re-enter later.

The archive stores raw objective values (in the maximisation orientation). Under objective-scale
drift (a change of units mid-training) its points are stale: :meth:`ParetoArchive.reset` it,
or feed objectives in a fixed canonical space.
"""

from __future__ import annotations

import numbers
from typing import Any

from optzoo._core.validation import check_choice, check_int, fail
from optzoo.copro.estep import _as_tensor

__all__ = ["ParetoArchive"]

_OWNER = "ParetoArchive"


def _check_senses(senses, m, owner):
    if senses is None:
        return None if m is None else ("max",) * m
    if isinstance(senses, str) or not isinstance(senses, (list, tuple)):
        fail("senses", owner, "a tuple of strings 'max'/'min'", senses, exc=TypeError)
    if len(senses) < 1:
        fail("senses", owner, "a non-empty tuple (one entry per objective)", senses)
    if m is not None and len(senses) != m:
        fail("senses", owner, f"a tuple of length m = {m} (one per objective)", senses)
    for s in senses:
        if s not in ("max", "min"):
            fail("senses", owner, "a tuple whose entries are 'max' or 'min'", senses)
    return tuple(senses)


def _normalise_key(key, owner):
    import numpy as np
    import torch

    if isinstance(key, torch.Tensor):
        if key.numel() != 1:
            fail("keys", owner, "a sequence of hashable keys (a tensor key must be a scalar)",
                 key, exc=TypeError)
        key = key.item()
    elif isinstance(key, np.generic):
        key = key.item()
    try:
        hash(key)
    except TypeError:
        fail("keys", owner, "a sequence of hashable keys (str, int, tuple, ...)", key,
             exc=TypeError)
    return key


def _dominated_by(P, X):
    """[len(X)] bool: X_i strictly dominated by some row of P (both [., m], max orientation)."""
    if P.shape[0] == 0:
        return X.new_zeros(X.shape[0], dtype=bool)
    ge = (P[:, None, :] >= X[None, :, :]).all(-1)
    gt = (P[:, None, :] > X[None, :, :]).any(-1)
    return (ge & gt).any(0)


def _nondominated_unique(P):
    """[n] bool: rows of P not strictly dominated by another row, duplicates kept once (first)."""
    import torch

    n = P.shape[0]
    ge = (P[:, None, :] >= P[None, :, :]).all(-1)                    # ge[j, i]: P_j >= P_i
    gt = (P[:, None, :] > P[None, :, :]).any(-1)
    dominated = (ge & gt).any(0)
    earlier = torch.ones(n, n, dtype=torch.bool, device=P.device).triu(1)   # [j, i]: j < i
    duplicate = (ge & ge.T & earlier).any(0)
    return ~dominated & ~duplicate


def _crowding(P):
    """NSGA-II crowding distance of each row of P [n, m] (extremes: inf)."""
    import torch

    n, m = P.shape
    order = torch.argsort(P, dim=0, stable=True)                      # [n, m]
    srt = torch.gather(P, 0, order)
    rng = srt[-1] - srt[0]                                            # [m]
    gap = (srt[2:] - srt[:-2]) / torch.where(rng > 0, rng, torch.ones_like(rng))
    gap = torch.where(rng > 0, gap, torch.zeros_like(gap))
    d = torch.zeros(n, dtype=P.dtype, device=P.device)
    d.scatter_add_(0, order[1:-1].reshape(-1), gap.reshape(-1))
    ends = torch.cat([order[0], order[-1]])
    d[ends] = float("inf")
    return d


class ParetoArchive:
    """Per-context running archives of non-dominated feasible objective vectors.

    Parameters
    ----------
    senses : tuple of m strings ``"max"``/``"min"`` (default: every objective maximised, m
        taken from the first call). Must equal the ``senses`` given to :func:`copro_e_step`.
    max_size : None (unbounded, the default) or an int >= 1: the most points kept per key;
        beyond it the most crowded point is dropped (smallest NSGA-II crowding distance,
        extremes kept, ties drop the older point).

    Keys identify contexts (a prompt id, a circuit spec): pass ``keys`` (one hashable per group:
    a list, or a 1-D tensor / array of ints) to :meth:`flags` and :meth:`update`. With
    ``keys=None`` every group uses the one key ``None`` (contexts that never repeat, one
    shared front). For :meth:`state_dict` to load with ``torch.load(weights_only=True)`` use
    str or int keys.

    :meth:`flags` never changes the archive; call :meth:`update` after the E-step (spec
    section 1.8, step 5): ``copro_e_step(..., score="pf_progress", archive=A)`` reads ``A`` and
    does not update it.

    Examples
    --------
    >>> import torch
    >>> A = ParetoArchive(senses=("max", "max"))
    >>> F = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.5, 0.0]]])
    >>> g = torch.tensor([[[-1.0], [-1.0], [1.0], [-1.0]]])  # sample 2 infeasible
    >>> A.flags(F, g).tolist()  # sample 3 is dominated by sample 0
    [[1.0, 1.0, 0.0, 0.0]]
    >>> _ = A.update(F, g)
    >>> A.front().tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    >>> A.flags(torch.tensor([[[1.0, 0.0], [0.6, 0.6]]])).tolist()
    [[0.0, 1.0]]
    """

    def __init__(self, senses=None, *, max_size=None):
        self._senses = _check_senses(senses, None, _OWNER)
        self._m = None if self._senses is None else len(self._senses)
        if max_size is not None:
            max_size = check_int("max_size", max_size, owner=_OWNER, low=1)
        self.max_size = max_size
        self._fronts: dict[Any, Any] = {}   # key -> [n, m] float64, max orientation, oldest first

    # -------------------------------------------------------------------------------------
    # introspection

    @property
    def senses(self):
        """The objective senses (None until the number of objectives is known)."""
        return self._senses

    def keys(self):
        """The context keys that hold at least one point."""
        return [k for k, P in self._fronts.items() if P.shape[0] > 0]

    def size(self, key=None):
        """Number of archived points for ``key``."""
        P = self._fronts.get(_normalise_key(key, _OWNER))
        return 0 if P is None else int(P.shape[0])

    def __len__(self):
        return sum(int(P.shape[0]) for P in self._fronts.values())

    def __repr__(self):
        return (f"ParetoArchive(senses={self._senses}, max_size={self.max_size}, "
                f"keys={len(self.keys())}, points={len(self)})")

    def front(self, key=None):
        """The archived points of ``key`` [n, m] in the user's orientation (oldest first)."""
        import torch

        P = self._fronts.get(_normalise_key(key, _OWNER))
        if P is None:
            return torch.zeros(0, self._m or 0, dtype=torch.float64)
        return P * self._sign(P.device)

    def reset(self, key=None, *, all_keys=False):
        """Empty the archive of ``key`` (or every key with ``all_keys=True``)."""
        if all_keys:
            self._fronts.clear()
        else:
            self._fronts.pop(_normalise_key(key, _OWNER), None)

    # -------------------------------------------------------------------------------------
    # input handling

    def _sign(self, device):
        import torch

        return torch.tensor([1.0 if s == "max" else -1.0 for s in self._senses],
                            dtype=torch.float64, device=device)

    def _effective_senses(self, m):
        return self._senses if self._senses is not None else ("max",) * m

    def _prepare(self, objectives, constraints, keys, on_nan, owner):
        """(F in max orientation [B, G, m], feasible [B, G] bool, keys list of length B)."""
        import torch

        F = _as_tensor("objectives", objectives, ndim=3, owner=owner)
        B, G, m = F.shape
        if B < 1 or G < 1 or m < 1:
            fail("objectives", owner, "a tensor of shape [B, G, m] with B, G, m >= 1",
                 f"shape {tuple(F.shape)}")
        if self._m is not None and m != self._m:
            fail("objectives", owner, f"a tensor with m = {self._m} objectives (as this "
                 "archive's senses)", f"shape {tuple(F.shape)}")
        g = _as_tensor("constraints", constraints, ndim=3, owner=owner)
        if g is None:
            g = torch.zeros(B, G, 0, dtype=torch.float64, device=F.device)
        elif g.shape[:2] != F.shape[:2]:
            fail("constraints", owner, f"a tensor of shape [B, G, k] = [{B}, {G}, k] (as "
                 "objectives)", f"shape {tuple(g.shape)}")
        g = g.to(F.device)
        check_choice("on_nan", on_nan, ("raise", "infeasible"), owner=owner)
        finite = torch.isfinite(F).all(-1) & torch.isfinite(g).all(-1)
        if on_nan == "raise" and not bool(finite.all()):
            fail("objectives", owner, "finite (NaN or inf in objectives or constraints; pass "
                 "on_nan='infeasible' to treat such samples as infeasible)", "NaN or inf")
        feas = finite & (torch.where(torch.isfinite(g), g, torch.ones_like(g)) <= 0).all(-1)
        senses = self._effective_senses(m)
        sign = torch.tensor([1.0 if s == "max" else -1.0 for s in senses], dtype=torch.float64,
                            device=F.device)
        F = torch.where(finite[..., None], F * sign, torch.zeros_like(F))
        return F, feas, self._keys(keys, B, owner)

    @staticmethod
    def _keys(keys, B, owner):
        import numpy as np
        import torch

        if keys is None:
            return [None] * B
        if isinstance(keys, (str, bytes)):
            fail("keys", owner, f"a sequence of B = {B} hashable keys (one per group), not a "
                 "single string", keys, exc=TypeError)
        if isinstance(keys, (torch.Tensor, np.ndarray)):
            if keys.ndim != 1:
                fail("keys", owner, f"a 1-D sequence of B = {B} keys (one per group)",
                     f"shape {tuple(keys.shape)}")
            keys = keys.tolist()
        try:
            keys = list(keys)
        except TypeError:
            fail("keys", owner, f"a sequence of B = {B} hashable keys (one per group)", keys,
                 exc=TypeError)
        if len(keys) != B:
            fail("keys", owner, f"a sequence of length B = {B} (one key per group)",
                 f"length {len(keys)}")
        return [_normalise_key(k, owner) for k in keys]

    # -------------------------------------------------------------------------------------
    # the flag and the update

    def _flags(self, F, feas, keys):
        """PF-progress flags [B, G] from prepared inputs (F in max orientation)."""
        import torch

        # Within-group exact dominance among feasible samples, batched over the B groups.
        ge = (F[:, :, None, :] >= F[:, None, :, :]).all(-1)            # [B, j, i]: F_j >= F_i
        gt = (F[:, :, None, :] > F[:, None, :, :]).any(-1)
        group_dom = (ge & gt & feas[:, :, None]).any(1)                  # [B, G]
        flag = feas & ~group_dom
        out = []
        for b, key in enumerate(keys):                                    # loop over groups only
            A = self._fronts.get(key)
            if A is None or A.shape[0] == 0:
                out.append(flag[b])
                continue
            A = A.to(F.device)
            weak = (A[:, None, :] >= F[b][None, :, :]).all(-1).any(0)    # [G]
            out.append(flag[b] & ~weak)
        return torch.stack(out).to(torch.float64)

    def flags(self, objectives, constraints=None, keys=None, *, on_nan="raise"):
        """The PF-progress flags :math:`p_i` [B, G] (float64 0/1) of every sample.

        ``objectives`` [B, G, m] and ``constraints`` [B, G, k] (feasible iff every entry <= 0;
        None: no constraints) as for :func:`copro_e_step`; ``keys`` one context key per group
        (None: the single key ``None``). Relative to the archive's current state: other groups
        of the same call do not count. Does not change the archive. ``on_nan="infeasible"``
        treats samples with NaN/inf as infeasible (flag 0) instead of raising.
        """
        F, feas, keys = self._prepare(objectives, constraints, keys, on_nan, "ParetoArchive.flags")
        return self._flags(F, feas, keys)

    def update(self, objectives, constraints=None, keys=None, *, on_nan="raise"):
        """Add the feasible samples and keep, per key, the non-dominated set.

        Same arguments as :meth:`flags`. Groups that share a key are merged in batch order.
        Returns a [B, G] bool tensor: True where the sample was added (it is in the archive
        after the call; a sample equal to a point already there, or to an earlier sample of
        the call, is not added again).
        """
        import torch

        owner = "ParetoArchive.update"
        F, feas, keys = self._prepare(objectives, constraints, keys, on_nan, owner)
        B, G, m = F.shape
        if self._senses is None:
            self._senses = ("max",) * m
            self._m = m
        added = torch.zeros(B, G, dtype=torch.bool, device=F.device)
        groups: dict[Any, list[int]] = {}
        for b, key in enumerate(keys):
            groups.setdefault(key, []).append(b)
        for key, rows in groups.items():
            idx = torch.tensor(rows, dtype=torch.long, device=F.device)
            Fk, fk = F[idx].reshape(-1, m), feas[idx].reshape(-1)
            which = torch.nonzero(fk)[:, 0]                              # flat (row, sample)
            if which.numel() == 0:
                continue
            old = self._fronts.get(key)
            old = F.new_zeros(0, m) if old is None else old.to(F.device)
            P = torch.cat([old, Fk[which]])
            origin = torch.cat([torch.full((old.shape[0],), -1, dtype=torch.long,
                                           device=F.device), which])
            keep = _nondominated_unique(P)
            P, origin = P[keep], origin[keep]
            if self.max_size is not None:
                P, origin = self._prune(P, origin, self.max_size)
            self._fronts[key] = P
            new = origin[origin >= 0]
            flat = added[idx].reshape(-1)
            flat[new] = True
            added[idx] = flat.reshape(len(rows), G)
        return added

    @staticmethod
    def _prune(P, origin, max_size):
        import torch

        while P.shape[0] > max_size:
            drop = int(torch.argmin(_crowding(P)))   # first minimum = the oldest among ties
            keep = torch.ones(P.shape[0], dtype=torch.bool, device=P.device)
            keep[drop] = False
            P, origin = P[keep], origin[keep]
        return P, origin

    # -------------------------------------------------------------------------------------
    # checkpointing

    def state_dict(self):
        """A checkpointable dict (plain Python values and CPU tensors)."""
        keys = [k for k in self._fronts]
        return {"version": 1, "senses": None if self._senses is None else list(self._senses),
                "max_size": self.max_size, "keys": keys,
                "fronts": [self._fronts[k].detach().cpu().clone() for k in keys]}

    def load_state_dict(self, state):
        """Restore :meth:`state_dict`'s output (senses, max_size and every front).

        An archive built with explicit ``senses`` refuses a state with other senses.
        """
        import torch

        owner = "ParetoArchive.load_state_dict"
        if not isinstance(state, dict):
            fail("state", owner, "a dict from ParetoArchive.state_dict()", state, exc=TypeError)
        missing = [k for k in ("senses", "max_size", "keys", "fronts") if k not in state]
        if missing:
            fail("state", owner, "a dict from ParetoArchive.state_dict() (with 'senses', "
                 "'max_size', 'keys', 'fronts')", f"a dict without {missing}")
        senses = state["senses"]
        senses = None if senses is None else _check_senses(tuple(senses), None, owner)
        if self._senses is not None and senses is not None and senses != self._senses:
            fail("state", owner, f"a state with this archive's senses {self._senses}",
                 f"senses {senses}")
        max_size = state["max_size"]
        if max_size is not None:
            if isinstance(max_size, bool) or not isinstance(max_size, numbers.Integral):
                fail("state", owner, "a state whose 'max_size' is None or an int >= 1",
                     max_size, exc=TypeError)
            max_size = check_int("max_size", max_size, owner=owner, low=1)
        keys, fronts = list(state["keys"]), list(state["fronts"])
        if len(keys) != len(fronts):
            fail("state", owner, "a state with as many 'fronts' as 'keys'",
                 f"{len(keys)} keys, {len(fronts)} fronts")
        m = None if senses is None else len(senses)
        out = {}
        for k, P in zip(keys, fronts, strict=True):
            P = torch.as_tensor(P, dtype=torch.float64)
            if P.ndim != 2 or (m is not None and P.shape[1] != m) or \
                    not bool(torch.isfinite(P).all()):
                fail("state", owner, f"a state whose fronts are finite [n, m] tensors (m = {m})",
                     f"key {k!r}: shape {tuple(P.shape)}")
            out[_normalise_key(k, owner)] = P.clone()
        self._senses, self._m, self.max_size, self._fronts = senses, m, max_size, out
