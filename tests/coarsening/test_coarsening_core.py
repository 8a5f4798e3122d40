"""Property tests of FGC, DIGC/ACNR objectives, the certificate and the DynamicCoarsener."""

import itertools

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from optzoo.coarsening import (
    DynamicCoarsener,
    GraphEvents,
    acnr_update,
    coarse_features,
    digc_update,
    epsilon_certificate,
    fgc,
    laplacian,
    project_rows_simplex,
)
from optzoo.coarsening.updates import _Blocks, _LowRank


def _rand_graph(p, dens, seed):
    rng = np.random.default_rng(seed)
    up = np.triu(rng.random((p, p)) < dens, 1)
    return sp.csr_matrix((up | up.T).astype(float))


def _fitted(update="acnr", seed=0, p=60, k=12):
    A = _rand_graph(p, 0.1, seed)
    X = np.random.default_rng(seed).normal(size=(p, 4))
    dc = DynamicCoarsener(k=k, update=update, seed=seed,
                          fgc_options=dict(n_outer=2, n_inner=3))
    dc.fit(A, X)
    return dc, X


def test_simplex_projection_matches_bruteforce():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(20, 5)) * 2
    P = project_rows_simplex(Y)
    assert np.allclose(P.sum(1), 1) and (P >= 0).all()
    # optimality: for any other simplex point z, <y - P, z - P> <= 0
    for z in np.eye(5):
        assert (np.sum((Y - P) * (z - P), axis=1) <= 1e-10).all()


def test_block_identity():
    rng = np.random.default_rng(1)
    A = _rand_graph(30, 0.2, 1)
    s, k = 22, 5
    CS = project_rows_simplex(rng.random((s, k)))
    dC = project_rows_simplex(rng.random((30 - s, k)))
    C = np.vstack([CS, dC])
    M1, M2, M4 = A[:s, :s], A[:s, s:], A[s:, s:]
    lhs = C.T @ (A @ C)
    rhs = CS.T @ (M1 @ CS) + dC.T @ (M2.T @ CS) + CS.T @ (M2 @ dC) + dC.T @ (M4 @ dC)
    assert np.abs(lhs - rhs).max() < 1e-10


@pytest.mark.parametrize("k", [3, 40])  # dense path and Gram path of _LowRank
def test_gradient_matches_autograd(k):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    p, s = 24, 16
    A = _rand_graph(p, 0.3, 2).tolil()
    A[:s, s:] = 0
    A[s:, :s] = 0
    for i, j in [(0, 16), (3, 17), (3, 20), (0, 23)]:  # new nodes touch survivors 0 and 3
        A[i, j] = A[j, i] = 1.0
    A = A.tocsr()
    A_prev = A[:s, :s].tolil()
    for i, j in [(5, 9), (5, 3), (0, 5)]:  # edge edits touching survivor 5 (and 0, 3, 9)
        A_prev[i, j] = A_prev[j, i] = 1.0 - A_prev[i, j]
    A_prev = A_prev.tocsr()
    CS = project_rows_simplex(rng.random((s, k)))
    Xc, Xn = rng.normal(size=(k, 3)), rng.normal(size=(p - s, 3))
    from optzoo.coarsening.updates import default_refine

    refine = default_refine(A, A_prev)
    assert set(refine.tolist()) == {0, 3, 5, 9}
    b = _Blocks(A, A_prev, CS, Xc, Xn, refine, 0.7, 1.3, 0.4, 0.9)
    Y = project_rows_simplex(rng.random((refine.size + p - s, k)))
    f, G = b.value_grad(Y)
    # reference objective written densely in torch
    T = lambda a: torch.tensor(np.asarray(a.todense() if sp.issparse(a) else a))  # noqa: E731
    Yt = torch.tensor(Y, requires_grad=True)
    CSt = T(CS).clone()
    CR, D = Yt[:4], Yt[4:]
    Cp = CSt.clone()
    Cp[refine] = CR
    Ct = torch.cat([Cp, D])
    Asurv = T(CS).T @ T(A_prev) @ T(CS)
    At = T(A)
    E1 = Ct.T @ At @ Ct - Asurv
    E5 = Cp.T @ At[:s, :s] @ Cp - Asurv
    F = (0.7 * (E1 ** 2).sum() + ((D.sum(1) - 1) ** 2).sum()
         + 0.45 * ((Cp[refine] - At[:s, s:][refine] @ D) ** 2).sum()
         + 1.3 * ((D @ T(Xc) - T(Xn)) ** 2).sum() + 0.2 * (E5 ** 2).sum())
    F.backward()
    assert abs(F.item() - f) <= 1e-8 * (1 + abs(f))
    assert np.allclose(Yt.grad.numpy(), G, atol=1e-8, rtol=1e-7)


def test_value_grad_sparse_and_dense_factor_paths_agree(monkeypatch):
    """value_grad multiplies the free block as a sparse factor below a density and as a dense
    one above it: both give the same objective and gradient."""
    import optzoo.coarsening.updates as upd

    rng = np.random.default_rng(5)
    p, s, k = 60, 45, 12
    A = _rand_graph(p, 0.15, 5)
    A_prev = _rand_graph(s, 0.15, 6)
    CS = project_rows_simplex(rng.random((s, k)) ** 4)
    Xc, Xn = rng.normal(size=(k, 3)), rng.normal(size=(p - s, 3))
    refine = np.array([1, 4, 9, 30])
    b = _Blocks(A, A_prev, CS, Xc, Xn, refine, 0.7, 1.3, 0.4, 0.9)
    Y = project_rows_simplex(3.0 * rng.random((refine.size + p - s, k)))
    assert 0 < np.count_nonzero(Y) < Y.size
    out = {}
    for below in (0.0, 2.0):  # always dense, always sparse
        monkeypatch.setattr(upd, "_SPARSE_BELOW", below)
        out[below] = b.value_grad(Y)
    assert np.isclose(out[0.0][0], out[2.0][0], rtol=1e-12)
    assert np.allclose(out[0.0][1], out[2.0][1], rtol=1e-10, atol=1e-12)


def test_lowrank_gram_equals_dense():
    rng = np.random.default_rng(3)
    U0, V0, U1, V1 = (rng.normal(size=(4, 30)) for _ in range(4))
    lr = _LowRank((U0, V0), [U1], [V1])
    assert lr.E is None
    S = U0.T @ V0
    E = S + S.T + U1.T @ V1
    assert np.isclose(lr.sqnorm(), np.sum(E * E))
    W = rng.normal(size=(2, 30))
    assert np.allclose(lr.left(W), W @ E)


def test_digc_isolated_new_node_is_feature_projection():
    # M2 = 0, M4 = 0: a new node whose features equal a coarse row gets that one-hot row
    A = sp.lil_matrix((5, 5))
    A[0, 1] = A[1, 0] = 1.0
    Xc = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    CS = np.eye(3)
    res = digc_update(sp.csr_matrix(A), CS, Xc, Xc[[2, 0]], zeta=1.0)
    assert np.allclose(res.x, np.eye(3)[[2, 0]], atol=1e-6)


def test_pgd_monotone_and_kkt_small():
    rng = np.random.default_rng(4)
    A = _rand_graph(40, 0.15, 4)
    CS = project_rows_simplex(rng.random((30, 6)))
    Xc = rng.normal(size=(6, 3))
    res = digc_update(A, CS, Xc, rng.normal(size=(10, 3)), omega=0.1, max_iter=500, tol=1e-10)
    tr = np.array(res.trace)
    assert (np.diff(tr) <= 1e-12 * np.abs(tr[:-1]).max()).all()
    assert res.kkt_residual < 1e-2 * (1 + np.abs(res.x).sum())
    assert np.allclose(res.x.sum(1), 1) and (res.x >= 0).all()


def test_certificate_exhaustive_small_graph():
    # every partition of a 6-node graph into 2..5 parts, hard C and X~ = C^+ X
    g = nx.petersen_graph().subgraph(range(6))
    A = sp.csr_matrix(nx.to_numpy_array(g))
    X = np.random.default_rng(5).normal(size=(6, 2))
    n_checked = 0
    for lab in itertools.product(range(5), repeat=6):
        lab = np.array(lab)
        if lab[0] != 0 or len(set(lab)) < 2 or set(lab) != set(range(lab.max() + 1)):
            continue
        k = lab.max() + 1
        C = sp.csr_matrix((np.ones(6), (np.arange(6), lab)), shape=(6, k))
        Xc = coarse_features(C, X)
        e = epsilon_certificate(A, X, C, Xc, lmax="lanczos")
        nx_ = np.sqrt(np.trace(X.T @ laplacian(A) @ X))
        nc = np.sqrt(np.trace(Xc.T @ (C.T @ laplacian(A) @ C) @ Xc))
        assert (1 - e["epsilon"]) * nx_ - 1e-9 <= nc <= (1 + e["epsilon"]) * nx_ + 1e-9
        assert e["epsilon"] <= e["epsilon_tight"] + 1e-9 <= e["epsilon_bound"] + 2e-9
        n_checked += 1
    assert n_checked > 100


def test_certificate_zero_for_identity():
    A = _rand_graph(10, 0.4, 6)
    X = np.random.default_rng(6).normal(size=(10, 3))
    e = epsilon_certificate(A, X, sp.identity(10, format="csr"), X)
    assert e["epsilon"] < 1e-10 and e["epsilon_bound"] < 1e-8


def test_certificate_shapes_are_checked():  # trial 2, item 8: scipy's matmul error before
    A = _rand_graph(10, 0.4, 6)
    X = np.random.default_rng(6).normal(size=(10, 3))
    C = sp.identity(10, format="csr")
    with pytest.raises(ValueError, match=r"The 'Xc' argument of epsilon_certificate must be an array "
                                         r"of shape \(2, 3\)\. Got shape \(10, 3\)"):
        epsilon_certificate(A, X, C[:, :2], X)
    with pytest.raises(ValueError, match=r"The 'C' argument of epsilon_certificate must be a \(10, k\)"):
        epsilon_certificate(A, X, C[:4], X)
    with pytest.raises(ValueError, match=r"The 'X' argument of epsilon_certificate must be an array "
                                         r"of shape \(10, n\)"):
        epsilon_certificate(A, X[:5], C, X)


def test_hard_coarse_laplacian_structure():
    A = _rand_graph(30, 0.2, 7)
    lab = np.arange(30) % 7
    C = sp.csr_matrix((np.ones(30), (np.arange(30), lab)))
    Lc = (C.T @ laplacian(A) @ C).toarray()
    assert np.allclose(Lc, Lc.T) and np.allclose(Lc.sum(1), 0)
    assert np.linalg.eigvalsh(Lc).min() > -1e-10


def test_fgc_rows_on_simplex_and_deterministic():
    A = _rand_graph(40, 0.15, 8)
    X = np.random.default_rng(8).normal(size=(40, 3))
    r1 = fgc(A, X, 8, n_outer=2, n_inner=3, seed=1)
    r2 = fgc(A, X, 8, n_outer=2, n_inner=3, seed=1)
    assert np.array_equal(r1.x, r2.x)
    assert np.allclose(r1.x.sum(1), 1) and (r1.x >= 0).all()


def test_update_without_events_changes_nothing():
    dc, _ = _fitted("digc")
    C0 = dc.state.C.toarray()
    st = dc.update(GraphEvents())
    assert np.array_equal(st.C.toarray(), C0) and st.n_reassigned == 0


@pytest.mark.parametrize("update", ["digc", "acnr"])
def test_alignment_and_validity(update):
    dc, X = _fitted(update)
    ids0 = dc.state.node_ids.copy()
    st = dc.update(GraphEvents(remove_nodes=[3, 7], add_nodes=[100, 101], features=X[:2],
                               add_edges=[[100, 0], [101, 100], [5, 9]], remove_edges=[]))
    expect = np.r_[np.delete(ids0, [3, 7]), [100, 101]]
    assert np.array_equal(st.node_ids, expect)
    C = st.C.toarray()
    assert C.shape[0] == 60 and np.allclose(C.sum(1), 1) and (C >= 0).all()
    assert (C.sum(0) > 0).all()  # pruning left no empty supernode
    assert st.epsilon <= st.epsilon_tight + 1e-9 <= st.epsilon_bound + 2e-9


def test_digc_keeps_survivor_rows():
    dc, X = _fitted("digc")
    C0 = dc.state.C.toarray()
    st = dc.update(GraphEvents(add_nodes=[100], features=X[:1], add_edges=[[100, 0]]))
    assert np.allclose(st.C.toarray()[:60], C0)


def test_event_order_invariance():
    dcs = [_fitted("acnr")[0] for _ in range(2)]
    X = dcs[0].features
    edges = [[100, 0], [101, 100], [5, 9], [101, 2]]
    st1 = dcs[0].update(dict(add_nodes=[100, 101], features=X[:2], add_edges=edges,
                             remove_edges=[], remove_nodes=[4]))
    st2 = dcs[1].update(dict(remove_nodes=[4], add_edges=edges[::-1], add_nodes=[100, 101],
                             features=X[:2]))
    assert np.allclose(st1.C.toarray(), st2.C.toarray())


def test_permutation_invariance_of_new_nodes():
    dcs = [_fitted("digc")[0] for _ in range(2)]
    X = dcs[0].features
    st1 = dcs[0].update(GraphEvents(add_nodes=[100, 101], features=X[:2],
                                    add_edges=[[100, 0], [101, 1]]))
    st2 = dcs[1].update(GraphEvents(add_nodes=[101, 100], features=X[[1, 0]],
                                    add_edges=[[100, 0], [101, 1]]))
    assert np.allclose(st1.C.toarray()[-2:], st2.C.toarray()[[-1, -2]], atol=1e-6)


def test_inputs_networkx_and_edge_list():
    g = nx.Graph()  # karate_club_graph carries weights; an edge list does not
    g.add_nodes_from(range(34))
    g.add_edges_from(nx.karate_club_graph().edges())
    X = np.random.default_rng(0).normal(size=(34, 3))
    s1 = DynamicCoarsener(k=6, fgc_options=dict(n_outer=1, n_inner=2)).fit(g, X)
    edges = np.array(g.edges())
    s2 = DynamicCoarsener(k=6, fgc_options=dict(n_outer=1, n_inner=2)).fit(edges, X)
    assert np.allclose(s1.C.toarray(), s2.C.toarray())
    e, w = s1.to_edge_list()
    assert e.shape[1] == 2 and w.size == e.shape[0]


# --------------------------------------------------------------------------- errors


def test_error_unknown_node():
    dc, X = _fitted()
    with pytest.raises(ValueError, match="'add_edges' argument of DynamicCoarsener.update "
                                         "must be ids of nodes present"):
        dc.update(GraphEvents(add_edges=[[0, 999]]))
    with pytest.raises(ValueError, match="'remove_nodes'.*present in the graph"):
        dc.update(GraphEvents(remove_nodes=[999]))


def test_error_delete_twice():
    dc, _ = _fitted()
    with pytest.raises(ValueError, match="'remove_nodes'.*distinct ids"):
        dc.update(GraphEvents(remove_nodes=[1, 1]))
    dc.update(GraphEvents(remove_nodes=[1]))
    with pytest.raises(ValueError, match="'remove_nodes'.*present in the graph. Got 1"):
        dc.update(GraphEvents(remove_nodes=[1]))


def test_error_feature_dimension_and_nan():
    dc, _ = _fitted()
    with pytest.raises(ValueError, match="'features'.*4 feature columns"):
        dc.update(GraphEvents(add_nodes=[100], features=np.ones((1, 3))))
    with pytest.raises(ValueError, match="'features'.*finite"):
        dc.update(GraphEvents(add_nodes=[100], features=np.full((1, 4), np.nan)))
    with pytest.raises(ValueError, match="'features'.*finite"):
        DynamicCoarsener(k=3).fit(_rand_graph(10, 0.5, 0), np.full((10, 2), np.inf))


def test_error_k_too_large_and_bad_kinds():
    with pytest.raises(ValueError, match="'k' argument of DynamicCoarsener must be an int in"):
        DynamicCoarsener(k=50).fit(_rand_graph(10, 0.5, 0), np.ones((10, 2)))
    with pytest.raises(ValueError, match="'k' argument of fgc"):
        fgc(_rand_graph(10, 0.5, 0), np.ones((10, 2)), 11)
    with pytest.raises(TypeError, match="'graph' argument"):
        DynamicCoarsener(k=2).fit([1, 2, 3], np.ones((3, 2)))
    with pytest.raises(ValueError, match="'ratio' argument of DynamicCoarsener"):
        DynamicCoarsener(ratio=1.5)
    dc, _ = _fitted()
    with pytest.raises(ValueError, match="'remove_nodes'.*leaves at least one node"):
        dc.update(GraphEvents(remove_nodes=list(dc.state.node_ids)))


def test_acnr_update_functional():
    rng = np.random.default_rng(9)
    A = _rand_graph(30, 0.15, 9)
    A_prev = A[:25, :25].tolil()
    A_prev[1, 2] = A_prev[2, 1] = 1.0 - A_prev[1, 2]
    CS = project_rows_simplex(rng.random((25, 4)))
    res = acnr_update(A, A_prev.tocsr(), CS, rng.normal(size=(4, 2)), rng.normal(size=(5, 2)))
    assert {1, 2} <= set(res.refine.tolist())
    assert res.x.shape == (res.refine.size + 5, 4)
    assert np.allclose(res.x.sum(1), 1) and (res.x >= 0).all()
    with pytest.raises(ValueError, match="'refine' argument of acnr_update"):
        acnr_update(A, A_prev.tocsr(), CS, rng.normal(size=(4, 2)), rng.normal(size=(5, 2)),
                    refine=[99])


# --------------------------------------------------------------------------- issue 17, item 5


def test_fit_networkx_graph_with_self_loop_drops_it_with_warning():
    g = nx.karate_club_graph()
    g.add_edge(0, 0)
    X = np.eye(34)[:, :4]
    with pytest.warns(UserWarning, match="dropped 1 self-loop"):
        st = DynamicCoarsener(k=8, seed=0, certificate=False).fit(g, X)
    assert st.C.shape == (34, 8)


def test_fgc_rejects_asymmetric_adjacency():
    A = sp.csr_matrix(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0.0]]))
    with pytest.raises(ValueError, match=r"The 'adj' argument of fgc must be symmetric .*"
                                         r"Got 'an asymmetric matrix, max \|A - A\.T\| = 1'\."):
        fgc(A, np.eye(3), 2)
    with pytest.raises(ValueError, match=r"The 'adj' argument of fgc must be non-negative"):
        fgc(sp.csr_matrix(np.array([[0, -1.0], [-1.0, 0]])), np.eye(2), 1)
    with pytest.raises(ValueError, match=r"The 'adj' argument of fgc must be a square"):
        fgc(sp.csr_matrix(np.ones((2, 3))), np.eye(2), 1)


def test_fit_warns_when_one_supernode_takes_most_nodes():
    g = nx.star_graph(183)  # 184 nodes; the heavy-edge start collapses the leaves
    X = np.random.default_rng(0).standard_normal((184, 8))
    with pytest.warns(UserWarning, match=r"supernode \d+ holds \d+ of 184 nodes .*degenerate"):
        st = DynamicCoarsener(ratio=0.25, seed=0, certificate=False).fit(g, X)
    assert np.bincount(st.assignment).max() > 92
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a balanced coarsening stays silent
        st = DynamicCoarsener(ratio=0.25, seed=0, certificate=False,
                              fgc_options={"C0": "random"}).fit(g, X)
    assert np.bincount(st.assignment).max() <= 92
