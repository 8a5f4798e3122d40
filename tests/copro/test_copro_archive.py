"""The running feasible Pareto archive, the PF-progress flag and the score arguments of the
E-step: hand-built cases, brute-force references, checkpoints and bad inputs."""

import io
import itertools
import warnings

import pytest
import torch

from optzoo.copro import ParetoArchive, copro_e_step

T = torch.float64


def _t(x):
    return torch.tensor(x, dtype=T)


def _dominates(x, y):  # exact Pareto dominance, maximisation
    return all(a >= b for a, b in zip(x, y, strict=True)) and any(a > b for a, b in zip(x, y, strict=True))


def _brute_front(points):
    """O(n^2) non-dominated set of a list of tuples (as a set)."""
    pts = set(points)
    return {p for p in pts if not any(_dominates(q, p) for q in pts)}


def _brute_flags(F, g, front_by_key, keys):
    """p_i from the definition, sample by sample (F in max orientation, lists)."""
    out = []
    for b, key in enumerate(keys):
        feas = [all(x <= 0 for x in gi) for gi in g[b]]
        row = []
        for i, f in enumerate(F[b]):
            ok = feas[i]
            ok = ok and not any(feas[j] and _dominates(F[b][j], f) for j in range(len(F[b])))
            ok = ok and not any(all(a >= x for a, x in zip(p, f, strict=True)) for p in front_by_key.get(key, ()))
            row.append(float(ok))
        out.append(row)
    return out


# ---------------------------------------------------------------------------------------------
# hand-built cases


def test_flags_hand_built():
    A = ParetoArchive(senses=("max", "max"))
    A.update(_t([[[2.0, 2.0], [0.0, 5.0]]]))            # archive: (2, 2), (0, 5)
    F = _t([[[3.0, 1.0],     # feasible, not dominated by anything -> 1
             [1.0, 1.0],     # dominated by the archive point (2, 2) -> 0
             [2.0, 2.0],     # equal to an archive point: no progress -> 0
             [2.5, 0.5],     # dominated in the group by sample 0 -> 0
             [9.0, 9.0],     # infeasible -> 0
             [1.0, 6.0],     # beats everything feasible on objective 2 -> 1
             [0.5, 5.5]]])   # dominated by sample 5 (and by the infeasible sample 4) -> 0
    g = _t([[[-1.0], [-1.0], [-1.0], [-1.0], [0.5], [0.0], [-1.0]]])
    assert A.flags(F, g).tolist() == [[1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]]
    # an infeasible dominator does not count (Deb's rules): without sample 5, sample 6 -> 1
    keep = [0, 1, 2, 3, 4, 6]
    assert A.flags(F[:, keep], g[:, keep]).tolist() == [[1.0, 0.0, 0.0, 0.0, 0.0, 1.0]]
    # two equal feasible samples in one group are both flagged (neither dominates the other)
    assert A.flags(_t([[[3.0, 3.0], [3.0, 3.0]]])).tolist() == [[1.0, 1.0]]
    # flags never change the archive
    assert A.size() == 2


def test_senses_are_respected():
    A = ParetoArchive(senses=("max", "min"))              # (accuracy up, cost down)
    A.update(_t([[[0.8, 10.0]]]))
    F = _t([[[0.9, 12.0],    # better accuracy, worse cost: not dominated -> 1
             [0.7, 11.0],    # worse on both -> 0
             [0.8, 9.0],     # same accuracy, cheaper: progress -> 1
             [0.8, 10.0]]])  # equal to the archive -> 0
    assert A.flags(F).tolist() == [[1.0, 0.0, 1.0, 0.0]]
    A.update(F)
    assert sorted(map(tuple, A.front().tolist())) == [(0.8, 9.0), (0.9, 12.0)]
    # the same data with every sense "max" gives another answer
    B = ParetoArchive()
    B.update(_t([[[0.8, 10.0]]]))
    assert B.flags(F).tolist() == [[1.0, 0.0, 0.0, 0.0]]


def test_keys_keep_separate_fronts():
    A = ParetoArchive()
    A.update(_t([[[1.0, 1.0]], [[5.0, 5.0]]]), keys=["a", "b"])
    F = _t([[[2.0, 2.0]], [[2.0, 2.0]]])
    assert A.flags(F, keys=["a", "b"]).tolist() == [[1.0], [0.0]]
    assert A.flags(F, keys=torch.tensor([0, 1])).tolist() == [[1.0], [1.0]]  # unseen keys
    assert sorted(A.keys()) == ["a", "b"] and A.size("a") == 1 and len(A) == 2
    A.reset("a")
    assert A.keys() == ["b"]
    A.reset(all_keys=True)
    assert len(A) == 0


def test_update_returns_what_was_added():
    A = ParetoArchive()
    A.update(_t([[[1.0, 1.0]]]))
    F = _t([[[1.0, 1.0], [2.0, 0.0], [2.0, 0.0], [0.0, 0.5], [3.0, 3.0]]])
    g = _t([[[-1.0], [-1.0], [-1.0], [-1.0], [1.0]]])
    added = A.update(F, g)
    assert added.tolist() == [[False, True, False, False, False]]
    assert sorted(map(tuple, A.front().tolist())) == [(1.0, 1.0), (2.0, 0.0)]


# ---------------------------------------------------------------------------------------------
# brute-force references


@pytest.mark.parametrize("m,senses", [(2, ("max", "max")), (3, ("max", "min", "max"))])
def test_update_and_flags_match_brute_force(m, senses):
    gen = torch.Generator().manual_seed(m)
    A = ParetoArchive(senses=senses)
    sign = torch.tensor([1.0 if s == "max" else -1.0 for s in senses], dtype=T)
    seen = {}
    for _step in range(15):
        B, G = 4, 6
        F = torch.randint(0, 6, (B, G, m), generator=gen).to(T)     # integers: ties, duplicates
        g = torch.randn(B, G, 2, generator=gen, dtype=T) - 0.8
        keys = torch.randint(0, 3, (B,), generator=gen).tolist()
        Fm = (F * sign).tolist()
        fronts = {k: _brute_front(v) for k, v in seen.items()}
        assert A.flags(F, g, keys).tolist() == _brute_flags(Fm, g.tolist(), fronts, keys)
        before = {k: set(map(tuple, A.front(k).tolist())) for k in set(keys)}
        added = A.update(F, g, keys)
        for b, k in enumerate(keys):
            for i in range(G):
                if all(x <= 0 for x in g[b, i].tolist()):
                    seen.setdefault(k, []).append(tuple(Fm[b][i]))
        for k, pts in seen.items():
            mine = A.front(k) * sign
            assert mine.shape[0] == len(set(map(tuple, mine.tolist()))), "no duplicates"
            assert set(map(tuple, mine.tolist())) == _brute_front(pts)
        for k in set(keys):
            new = set(map(tuple, A.front(k).tolist())) - before[k]
            rows = [b for b, kk in enumerate(keys) if kk == k]
            got = [tuple(F[b, i].tolist()) for b in rows for i in range(G) if added[b, i]]
            assert sorted(got) == sorted(new)          # each new point added exactly once


def test_max_size_drops_the_most_crowded_point():
    A = ParetoArchive(max_size=4)
    pts = [[0.0, 4.0], [1.0, 3.0], [1.1, 2.9], [2.0, 2.0], [4.0, 0.0]]
    A.update(_t([pts]))
    # crowding: (1, 3): 1.1/4 + 1.1/4 = 0.55; (1.1, 2.9): 1/4 + 1/4 = 0.5; (2, 2): 1.45
    assert sorted(map(tuple, A.front().tolist())) == [(0.0, 4.0), (1.0, 3.0), (2.0, 2.0), (4.0, 0.0)]
    gen = torch.Generator().manual_seed(0)
    B = ParetoArchive(max_size=6)
    for _ in range(20):
        x = torch.rand(2, 8, 1, generator=gen, dtype=T)
        B.update(torch.cat([x, 1 - x ** 2 + 0.01 * torch.rand(2, 8, 1, generator=gen, dtype=T)], -1))
        P = B.front()
        assert P.shape[0] <= 6
        assert not any(_dominates(p, q) for p, q in itertools.permutations(P.tolist(), 2))
    # the extremes of each objective survive pruning
    C = ParetoArchive(max_size=3)
    C.update(_t([[[0.0, 1.0], [0.2, 0.9], [0.4, 0.8], [0.6, 0.6], [1.0, 0.0]]]))
    P = C.front().tolist()
    assert [0.0, 1.0] in P and [1.0, 0.0] in P and len(P) == 3


def test_on_nan_infeasible():
    A = ParetoArchive()
    F = _t([[[float("nan"), 1.0], [0.0, 0.0]]])
    with pytest.raises(ValueError, match=r"'objectives' argument of ParetoArchive.flags must be finite"):
        A.flags(F)
    assert A.flags(F, on_nan="infeasible").tolist() == [[0.0, 1.0]]
    A.update(F, on_nan="infeasible")
    assert A.front().tolist() == [[0.0, 0.0]]


# ---------------------------------------------------------------------------------------------
# checkpoints


def test_state_dict_round_trip_through_torch_save():
    gen = torch.Generator().manual_seed(1)
    A = ParetoArchive(senses=("max", "min"), max_size=5)
    for _ in range(5):
        A.update(torch.randn(3, 6, 2, generator=gen, dtype=T), torch.randn(3, 6, 1, generator=gen, dtype=T),
                 keys=torch.tensor([0, 1, 2]))
    buf = io.BytesIO()
    torch.save(A.state_dict(), buf)
    buf.seek(0)
    B = ParetoArchive()
    B.load_state_dict(torch.load(buf, weights_only=True))
    assert B.senses == ("max", "min") and B.max_size == 5 and sorted(B.keys()) == [0, 1, 2]
    for k in range(3):
        assert torch.equal(A.front(k), B.front(k))
    F, g = torch.randn(3, 6, 2, generator=gen, dtype=T), torch.randn(3, 6, 1, generator=gen, dtype=T)
    assert torch.equal(A.flags(F, g, [0, 1, 2]), B.flags(F, g, [0, 1, 2]))
    assert torch.equal(A.update(F, g, [0, 1, 2]), B.update(F, g, [0, 1, 2]))
    for k in range(3):
        assert torch.equal(A.front(k), B.front(k))
    with pytest.raises(ValueError, match=r"'state' argument of ParetoArchive.load_state_dict .* senses"):
        ParetoArchive(senses=("max", "max")).load_state_dict(A.state_dict())


# ---------------------------------------------------------------------------------------------
# the E-step with score="pf_progress"


def test_e_step_with_pf_progress_reads_but_does_not_update_the_archive():
    gen = torch.Generator().manual_seed(2)
    F = torch.randn(6, 8, 2, generator=gen, dtype=T)
    g = torch.randn(6, 8, 1, generator=gen, dtype=T) + 0.3
    keys = [0, 0, 1, 1, 2, 2]
    A = ParetoArchive(senses=("max", "min"))
    A.update(torch.randn(6, 8, 2, generator=gen, dtype=T), -torch.ones(6, 8, 1, dtype=T), keys)
    state = A.state_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = copro_e_step(F, g, senses=("max", "min"), score="pf_progress", archive=A, keys=keys,
                           beta=0.5)
        flags = A.flags(F, g, keys)
        ref = copro_e_step(F, g, senses=("max", "min"), score=flags, beta=0.5)
    assert torch.equal(est.diagnostics["score"], flags)
    assert torch.equal(est.q, ref.q) and torch.equal(est.lambdas, ref.lambdas)
    assert 0 < flags.sum() < flags.numel()
    after = A.state_dict()
    assert after["keys"] == state["keys"]
    assert all(torch.equal(a, b) for a, b in zip(after["fronts"], state["fronts"], strict=True))
    # progress samples get more mass than they would without the score (same constraints)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = copro_e_step(F, g, senses=("max", "min"))
    mass = lambda q: (q * flags).sum(-1)  # noqa: E731
    assert (mass(est.q) >= mass(plain.q) - 1e-12).all() and (mass(est.q) > mass(plain.q)).any()


def test_score_warnings():
    F = torch.ones(1, 4, 2, dtype=T)
    s = _t([[0.0, 1.0, 2.0, 3.0]])
    with pytest.warns(UserWarning, match="score-tilted base"):
        est = copro_e_step(F, -torch.ones(1, 4, 1, dtype=T), score=s, beta=2.0)
    assert est.status == ["all_tied"] and torch.allclose(est.q, torch.softmax(s / 2.0, -1))
    F = torch.randn(1, 4, 2, generator=torch.Generator().manual_seed(0), dtype=T)
    with pytest.warns(UserWarning, match="underflowed to 0"):
        copro_e_step(F, score=_t([[0.0, 0.0, 0.0, 1000.0]]), beta=1.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    gen = torch.Generator().manual_seed(3)
    F = torch.randn(512, 8, 2, generator=gen, dtype=T)
    g = torch.randn(512, 8, 1, generator=gen, dtype=T) + 0.3
    keys = list(range(64)) * 8
    out = []
    for dev in ("cpu", "cuda"):
        A = ParetoArchive(max_size=8)
        A.update(torch.randn(512, 8, 2, generator=torch.Generator().manual_seed(4), dtype=T).to(dev),
                 keys=keys)
        est = copro_e_step(F.to(dev), g.to(dev), score="pf_progress", archive=A, keys=keys, warn=False)
        out.append((est.q.cpu(), A.flags(F.to(dev), g.to(dev), keys).cpu(), A.front(5).cpu()))
    assert torch.allclose(out[0][0], out[1][0], atol=1e-6)
    assert torch.equal(out[0][1], out[1][1]) and torch.equal(out[0][2], out[1][2])


# ---------------------------------------------------------------------------------------------
# bad inputs: ValueError / TypeError naming the argument, the rule and the value

F0 = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(0))
G0 = torch.randn(2, 4, 1, generator=torch.Generator().manual_seed(1))
S0 = torch.zeros(2, 4)
AR = ParetoArchive(senses=("max", "max", "max"))

CASES = [
    (lambda: copro_e_step(F0, G0, score=S0, beta=0.0), ValueError,
     r"'beta' argument of copro_e_step must be a finite real number in \(0, inf\). Got 0.0"),
    (lambda: copro_e_step(F0, G0, beta=-1.0), ValueError, r"'beta' .* \(0, inf\). Got -1.0"),
    (lambda: copro_e_step(F0, G0, score=S0, beta=float("nan")), ValueError, r"'beta' .* finite .* Got nan"),
    (lambda: copro_e_step(F0, G0, score=S0, beta=float("inf")), ValueError, r"'beta' .* finite .* Got inf"),
    (lambda: copro_e_step(F0, G0, score=S0, beta="1"), TypeError, r"'beta' .* real number"),
    (lambda: copro_e_step(F0, G0, score=torch.zeros(2, 5)), ValueError,
     r"'score' argument of copro_e_step must be a tensor of shape \[B, G\] = \[2, 4\] .* Got 'shape \(2, 5\)'"),
    (lambda: copro_e_step(F0, G0, score=torch.zeros(2, 4, 1)), ValueError, r"'score' .* \[B, G\]"),
    (lambda: copro_e_step(F0, G0, score=torch.full((2, 4), float("nan"))), ValueError,
     r"'score' argument of copro_e_step must be finite .* Got 'NaN or inf'"),
    (lambda: copro_e_step(F0, G0, score=torch.full((2, 4), float("inf"))), ValueError, r"'score' .* finite"),
    (lambda: copro_e_step(F0, G0, score="pf_progress"), ValueError,
     r"'archive' argument of copro_e_step must be a ParetoArchive when score='pf_progress' .* Got None"),
    (lambda: copro_e_step(F0, G0, score="pf_progress", archive={}), TypeError, r"'archive' .* ParetoArchive"),
    (lambda: copro_e_step(F0, G0, score="hypervolume"), ValueError,
     r"'score' argument of copro_e_step must be None, a \[B, G\] tensor of scores or 'pf_progress'. Got 'hypervolume'"),
    (lambda: copro_e_step(F0, G0, score={"a": 1}), TypeError, r"'score'"),
    (lambda: copro_e_step(F0, G0, score="pf_progress", archive=AR, keys=[1]), ValueError,
     r"'keys' argument of copro_e_step must be a sequence of length B = 2 .* Got 'length 1'"),
    (lambda: copro_e_step(F0, G0, score="pf_progress", archive=AR, keys="ab"), TypeError, r"'keys' .* not a single string"),
    (lambda: copro_e_step(F0, G0, score="pf_progress", archive=AR, keys=[[1], [2]]), TypeError, r"'keys' .* hashable"),
    (lambda: copro_e_step(F0, G0, score=S0, archive=AR), ValueError, r"'archive' .* None unless score='pf_progress'"),
    (lambda: copro_e_step(F0, G0, keys=[0, 1]), ValueError, r"'keys' .* None unless score='pf_progress'"),
    (lambda: copro_e_step(F0, G0, senses=("max", "min", "max"), score="pf_progress", archive=AR), ValueError,
     r"'archive' .* senses equal copro_e_step's senses \('max', 'min', 'max'\)"),
    (lambda: AR.flags(F0, G0, keys=[0, 1, 2]), ValueError,
     r"'keys' argument of ParetoArchive.flags must be a sequence of length B = 2 .* Got 'length 3'"),
    (lambda: AR.update(F0[..., :2]), ValueError, r"'objectives' argument of ParetoArchive.update .* m = 3"),
    (lambda: AR.update(F0, G0[:, :3]), ValueError, r"'constraints' argument of ParetoArchive.update"),
    (lambda: AR.flags(F0[0]), ValueError, r"'objectives' .* \[B, G, m\]"),
    (lambda: AR.flags(F0, on_nan="drop"), ValueError, r"'on_nan' .* 'raise', 'infeasible'"),
    (lambda: ParetoArchive(max_size=0), ValueError, r"'max_size' argument of ParetoArchive must be an int in \[1, inf\]. Got 0"),
    (lambda: ParetoArchive(max_size=2.5), TypeError, r"'max_size'"),
    (lambda: ParetoArchive(senses=("max", "up")), ValueError, r"'senses' .* 'max' or 'min'"),
    (lambda: ParetoArchive(senses="max"), TypeError, r"'senses'"),
    (lambda: ParetoArchive().load_state_dict({"senses": None}), ValueError, r"'state' .* 'fronts'"),
    (lambda: ParetoArchive().load_state_dict([1]), TypeError, r"'state'"),
    (lambda: ParetoArchive().load_state_dict({"senses": ["max"], "max_size": None, "keys": [0],
                                              "fronts": [torch.zeros(2, 3)]}), ValueError, r"'state' .* \[n, m\]"),
]


@pytest.mark.parametrize("call,exc,match", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
