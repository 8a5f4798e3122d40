"""ACNR's bounded refine rule (refine_threshold / max_refine), the exactness of the objective
when frozen survivors touch the change, and the bad inputs of the new arguments."""

import numpy as np
import pytest
import scipy.sparse as sp

from optzoo.coarsening import DynamicCoarsener, GraphEvents, acnr_update, project_rows_simplex
from optzoo.coarsening.updates import _Blocks, default_refine, refine_scores


def _sym(p, edges):
    A = sp.lil_matrix((p, p))
    for e in edges:
        i, j, w = (*e, 1.0) if len(e) == 2 else e
        A[i, j] = A[j, i] = w
    return A.tocsr()


def _tiny_event():
    """6 survivors + 1 new node (index 6).

    t-1 (survivors): 0-1, 0-2, 0-3, 0-4, 4-5; survivor 3 also had a neighbour that is deleted.
    t: edge 0-1 removed, 1-2 added, new node 6 joins with 0-6 (weight 0.5) and 5-6 (0.5).
    Changed fraction: 0: (1 + 0.5) / 4; 1: 2 / 1; 2: 1 / 2; 3: 1 / 2 (the deletion);
    4: 0; 5: 0.5 / 1.5.
    """
    A_prev = _sym(6, [(0, 1), (0, 2), (0, 3), (0, 4), (4, 5)])
    A = _sym(7, [(0, 2), (0, 3), (0, 4), (4, 5), (1, 2), (0, 6, 0.5), (5, 6, 0.5)])
    dw = np.array([0, 0, 0, 1.0, 0, 0])
    return A, A_prev, dw


def test_refine_scores_on_hand_built_event():
    A, A_prev, dw = _tiny_event()
    assert np.allclose(refine_scores(A, A_prev, dw), [0.375, 2.0, 0.5, 0.5, 0.0, 1 / 3])
    # without the deletion weights survivor 3 looks untouched
    assert refine_scores(A, A_prev)[3] == 0.0


def test_default_refine_threshold_and_cap():
    A, A_prev, dw = _tiny_event()
    kw = dict(deleted_weight=dw)
    assert default_refine(A, A_prev, **kw).tolist() == [0, 1, 2, 3, 5]  # threshold 0: all touched
    assert default_refine(A, A_prev, threshold=0.4, **kw).tolist() == [1, 2, 3]
    assert default_refine(A, A_prev, threshold=0.35, **kw).tolist() == [0, 1, 2, 3]
    # cap: highest score first; 2 and 3 tie on score and changed weight -> lower index
    assert default_refine(A, A_prev, threshold=0.0, max_refine=2, **kw).tolist() == [1, 2]
    assert default_refine(A, A_prev, threshold=0.0, max_refine=4, **kw).tolist() == [0, 1, 2, 3]
    assert default_refine(A, A_prev, max_refine=0, **kw).tolist() == []
    # the old rule (any change, deletions counted through the weights) is threshold 0
    assert default_refine(A, A_prev).tolist() == [0, 1, 2, 5]


def test_acnr_update_uses_the_rule():
    A, A_prev, dw = _tiny_event()
    rng = np.random.default_rng(0)
    CS = project_rows_simplex(rng.random((6, 3)))
    Xc, Xn = rng.normal(size=(3, 2)), rng.normal(size=(1, 2))
    res = acnr_update(A, A_prev, CS, Xc, Xn, deleted_weight=dw, refine_threshold=0.4)
    assert res.refine.tolist() == [1, 2, 3]
    assert res.x.shape == (4, 3)
    res = acnr_update(A, A_prev, CS, Xc, Xn, deleted_weight=dw, max_refine=1, refine_threshold=0)
    assert res.refine.tolist() == [1]


def test_rule_and_explicit_refine_give_the_same_solution():
    rng = np.random.default_rng(1)
    p, s, k = 40, 32, 5
    A = sp.csr_matrix(np.triu(rng.random((p, p)) < 0.15, 1).astype(float))
    A = (A + A.T).tocsr()
    A_prev = A[:s, :s].tolil()
    for i, j in [(1, 2), (3, 4), (10, 20)]:
        A_prev[i, j] = A_prev[j, i] = 1.0 - A_prev[i, j]
    A_prev = A_prev.tocsr()
    CS = project_rows_simplex(rng.random((s, k)))
    Xc, Xn = rng.normal(size=(k, 3)), rng.normal(size=(p - s, 3))
    for thr, cap in ((0.0, None), (0.2, None), (0.0, 5)):
        auto = acnr_update(A, A_prev, CS, Xc, Xn, refine_threshold=thr, max_refine=cap)
        given = acnr_update(A, A_prev, CS, Xc, Xn,
                            refine=default_refine(A, A_prev, threshold=thr, max_refine=cap))
        assert np.array_equal(auto.refine, given.refine)
        assert np.array_equal(auto.x, given.x) and auto.fun == given.fun


@pytest.mark.parametrize("k", [3, 40])  # dense path and Gram path of the residuals
def test_objective_exact_with_frozen_rows_touching_the_change(k):
    """With a partial refine set the objective still equals the full ACNR objective (up to a
    constant over frozen rows): frozen survivors with a new neighbour keep their beta term,
    edits between two frozen survivors enter the residuals."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    p, s = 24, 16
    A = _sym(p, [(i, j) for i in range(p) for j in range(i + 1, p) if rng.random() < 0.3]).tolil()
    A[:s, s:] = 0
    A[s:, :s] = 0
    for i, j in [(0, 16), (3, 17), (3, 20), (7, 23), (8, 18)]:  # 7 and 8 will stay frozen
        A[i, j] = A[j, i] = 1.0
    A = A.tocsr()
    A_prev = A[:s, :s].tolil()
    for i, j in [(5, 9), (5, 3), (11, 12), (12, 13)]:  # 11-12, 12-13: frozen-frozen edits
        A_prev[i, j] = A_prev[j, i] = 1.0 - A_prev[i, j]
    A_prev = A_prev.tocsr()
    refine = np.array([0, 3, 5, 9])
    CS = project_rows_simplex(rng.random((s, k)))
    Xc, Xn = rng.normal(size=(k, 3)), rng.normal(size=(p - s, 3))
    w = dict(omega=0.7, zeta=1.3, alpha=0.4, beta=0.9)
    b = _Blocks(A, A_prev, CS, Xc, Xn, refine, *w.values())

    def full(Y):  # the ACNR objective over every survivor, dense, in torch
        T = lambda a: torch.tensor(np.asarray(a.todense() if sp.issparse(a) else a))  # noqa: E731
        Cp = T(CS).clone()
        Cp[refine] = Y[:4]
        D = Y[4:]
        Ct = torch.cat([Cp, D])
        Asurv = T(CS).T @ T(A_prev) @ T(CS)
        At = T(A)
        E1 = Ct.T @ At @ Ct - Asurv
        E5 = Cp.T @ At[:s, :s] @ Cp - Asurv
        return (w["omega"] * (E1 ** 2).sum() + ((D.sum(1) - 1) ** 2).sum()
                + w["beta"] / 2 * ((Cp - At[:s, s:] @ D) ** 2).sum()
                + w["zeta"] * ((D @ T(Xc) - T(Xn)) ** 2).sum() + w["alpha"] / 2 * (E5 ** 2).sum())

    vals = []
    for trial in range(2):
        Y = project_rows_simplex(rng.random((4 + p - s, k)))
        f, G = b.value_grad(Y)
        Yt = torch.tensor(Y, requires_grad=True)
        F = full(Yt)
        F.backward()
        assert np.allclose(Yt.grad.numpy(), G, atol=1e-8, rtol=1e-7), trial
        vals.append(F.item() - f)
    assert abs(vals[0] - vals[1]) <= 1e-8 * (1 + abs(vals[0]))  # differs by a constant only


def test_dynamic_coarsener_refine_rule():
    rng = np.random.default_rng(3)
    A = sp.csr_matrix(np.triu(rng.random((60, 60)) < 0.1, 1).astype(float))
    A = (A + A.T).tocsr()
    X = rng.normal(size=(60, 4))
    ev = GraphEvents(remove_nodes=[3, 7], add_nodes=[100, 101], features=X[:2],
                     add_edges=[[100, 0], [101, 100], [5, 9]], remove_edges=[])
    sizes = {}
    for thr, cap in ((0.0, None), (0.1, None), (0.0, 3)):
        dc = DynamicCoarsener(k=12, seed=0, refine_threshold=thr, max_refine=cap,
                              fgc_options=dict(n_outer=2, n_inner=3))
        dc.fit(A, X)
        st = dc.update(ev)
        sizes[(thr, cap)] = st.result.refine.size
        C = st.C.toarray()
        assert np.allclose(C.sum(1), 1) and (C >= 0).all()
    assert sizes[(0.0, 3)] == 3 and sizes[(0.1, None)] <= sizes[(0.0, None)]


def test_bad_refine_arguments():
    A, A_prev, dw = _tiny_event()
    CS = np.full((6, 3), 1 / 3)
    args = (A, A_prev, CS, np.eye(3)[:, :2], np.zeros((1, 2)))
    with pytest.raises(ValueError, match=r"The 'refine_threshold' argument of acnr_update must be "
                                         r"a finite real number in \[0, 2\]. Got -0.1"):
        acnr_update(*args, refine_threshold=-0.1)
    with pytest.raises(ValueError, match=r"'refine_threshold' argument of acnr_update.*Got nan"):
        acnr_update(*args, refine_threshold=float("nan"))
    with pytest.raises(ValueError, match=r"The 'max_refine' argument of acnr_update must be an "
                                         r"int in \[0, inf\]. Got -1"):
        acnr_update(*args, max_refine=-1)
    with pytest.raises(TypeError, match=r"'max_refine' argument of acnr_update must be an int"):
        acnr_update(*args, max_refine=2.5)
    with pytest.raises(ValueError, match=r"'deleted_weight' argument of acnr_update must be an "
                                         r"array of shape \(6,\)"):
        acnr_update(*args, deleted_weight=np.zeros(5))
    with pytest.raises(ValueError, match=r"'deleted_weight' argument of acnr_update must be "
                                         r"non-negative weights. Got -1"):
        acnr_update(*args, deleted_weight=-dw)
    with pytest.raises(ValueError, match=r"The 'threshold' argument of default_refine"):
        default_refine(A, A_prev, threshold=2.5)
    with pytest.raises(ValueError, match=r"The 'refine_threshold' argument of DynamicCoarsener"):
        DynamicCoarsener(refine_threshold=3)
    with pytest.raises(ValueError, match=r"The 'max_refine' argument of DynamicCoarsener .*Got -2"):
        DynamicCoarsener(max_refine=-2)
