"""read_graph: every input format, id mapping, and every error rule."""

import gzip
import re
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import torch

from optzoo._core.graph import Graph, read_graph

TRI = np.array([[0, 1], [1, 2], [2, 0]])


def _canon(g: Graph):
    coo = sp.triu(g.adj, 1).tocoo()
    return sorted(zip(g.labels[coo.row].tolist(), g.labels[coo.col].tolist(), coo.data.tolist(), strict=True))


def test_edge_list_text_and_gzip(tmp_path):
    text = "# SNAP header\n#  another\n10 20\n20\t30\n\n30   10\n20 10\n"
    p = tmp_path / "g.txt"
    p.write_text(text)
    g = read_graph(p)
    assert (g.n, g.m) == (3, 3)
    assert g.labels.tolist() == [10, 20, 30]
    pz = tmp_path / "g.txt.gz"
    with gzip.open(pz, "wt") as fh:
        fh.write(text)
    assert _canon(read_graph(str(pz))) == _canon(g)


def test_weighted_edge_list_keeps_max_weight(tmp_path):
    p = tmp_path / "w.txt"
    p.write_text("0 1 2.5\n1 0 4.0\n1 2 1.0\n")
    g = read_graph(p)
    assert g.weighted and g.m == 2
    assert g.adj[0, 1] == 4.0 and g.adj[1, 0] == 4.0


def test_matrix_market(tmp_path):
    import scipy.io

    p = tmp_path / "g.mtx"
    scipy.io.mmwrite(str(p), sp.coo_matrix(nx.to_scipy_sparse_array(nx.cycle_graph(5))))
    g = read_graph(p)
    assert (g.n, g.m) == (5, 5)


def test_csv_with_header_and_names(tmp_path):
    p = tmp_path / "g.csv"
    p.write_text("source,target,weight\nalice,bob,1\nbob,carol,2\n")
    g = read_graph(p)
    assert g.labels.tolist() == ["alice", "bob", "carol"]
    assert g.weighted and g.m == 2


def test_networkx_scipy_numpy_torch_agree():
    G = nx.relabel_nodes(nx.petersen_graph(), {i: f"v{i}" for i in range(10)})
    g = read_graph(G)
    assert g.labels[0] == "v0" and (g.n, g.m) == (10, 15)
    a = nx.to_scipy_sparse_array(nx.petersen_graph())
    e = np.array(list(nx.petersen_graph().edges()))
    ref = _canon(read_graph(a))
    assert _canon(read_graph(e)) == ref
    assert _canon(read_graph(torch.tensor(e))) == ref
    assert _canon(read_graph(torch.tensor(e).T.contiguous())) == ref  # PyG 2 x m
    assert _canon(read_graph(torch.tensor(a.toarray()).to_sparse_csr())) == ref


def test_noncontiguous_ids_and_duplicates_collapse():
    e = np.array([[5, 100], [100, 5], [100, 7], [7, 100], [5, 100]])
    g = read_graph(e)
    assert g.labels.tolist() == [5, 7, 100] and g.m == 2


def test_self_loops_dropped_with_warning():
    with pytest.warns(UserWarning, match="self-loop"):
        g = read_graph(np.array([[0, 0], [0, 1], [1, 2]]))
    assert g.m == 2 and g.adj.diagonal().sum() == 0


def test_symmetrize_directed_matrix():
    a = sp.csr_matrix(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=float))
    assert read_graph(a).m == 2
    with pytest.raises(ValueError, match=r"The 'graph' argument of read_graph must be a symmetric"):
        read_graph(a, symmetrize=False)
    with pytest.raises(ValueError, match="symmetric"):
        read_graph(nx.DiGraph([(0, 1)]), symmetrize=False)


@pytest.mark.parametrize(
    "obj, exc, pattern",
    [
        ([[0, 1]], TypeError, r"The 'graph' argument of read_graph must be a Graph, a path .* Got list\."),
        (np.zeros((0, 2), dtype=int), ValueError, r"must be an \(m, 2\) or \(m, 3\) edge array"),
        (np.array([[0.5, 1.0]]), ValueError, "integer node ids"),
        (np.array([[0, 1, -1.0]]), ValueError, "non-negative edge weights"),
        (np.array([[0, 1, np.nan]]), ValueError, "finite edge weights"),
        (sp.csr_matrix(np.ones((2, 3))), ValueError, "square adjacency matrix"),
        (sp.csr_matrix(np.array([[0, np.inf], [np.inf, 0]])), ValueError, "finite"),
        (np.array([[3, 3]]), ValueError, "at least one edge"),
    ],
)
def test_errors(obj, exc, pattern):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the self-loop case warns before it raises
        with pytest.raises(exc, match=pattern):
            read_graph(obj)


def test_file_errors_name_file_and_line(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "nope.txt"))):
        read_graph(tmp_path / "nope.txt")
    p = tmp_path / "bad.txt"
    p.write_text("# c\n0 1\n1 2 3 4\n")
    with pytest.raises(ValueError, match=rf"{re.escape(str(p))}, line 3: expected"):
        read_graph(p)
    p.write_text("0 1\n1 x\n")
    with pytest.raises(ValueError, match="line 2: node ids must be integers"):
        read_graph(p)
    p.write_text("0 1 1.0\n1 2 -3\n")
    with pytest.raises(ValueError, match="line 2: edge weights must be finite and non-negative"):
        read_graph(p)
    p.write_text("0 1 1.0\n1 2 abc\n")
    with pytest.raises(ValueError, match="line 2: the weight must be a number"):
        read_graph(p)


# --------------------------------------------------------------------------- issue 17, item 5


def test_networkx_self_loop_dropped_with_warning_not_negative_weight():
    # networkx writes an undirected loop as +1, +1, -1 COO entries: read as "Got -1.0" before.
    for g in (nx.Graph([(0, 1), (1, 2)]), nx.karate_club_graph()):
        g.add_edge(0, 0)
        with pytest.warns(UserWarning, match="dropped 1 self-loop"):
            out = read_graph(g)
        assert out.adj.diagonal().sum() == 0 and out.m == g.number_of_edges() - 1


def test_csv_without_header_keeps_first_edge(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("0,1\n1,2\n2,3\n")
    assert read_graph(p).m == 3
    p.write_text("0,1,2.5\n1,2,1.0\n")
    g = read_graph(p)
    assert g.m == 2 and g.max_weight == 2.5
    p.write_text("u,v\n0,1\n1,2\n")  # a header is still a header
    assert read_graph(p).m == 2


def test_fake_gzip_and_directory_get_clear_errors(tmp_path):
    p = tmp_path / "e.txt.gz"
    p.write_text("0 1\n1 2\n")
    with pytest.raises(ValueError, match=r"The 'graph' argument of read_graph must be a "
                                         r"gzip-compressed file.*Got '.*e\.txt\.gz'\."):
        read_graph(p)
    with pytest.raises(ValueError, match=r"must be a path to a graph file \(not a directory\)\. "
                                         rf"Got {re.escape(repr(str(tmp_path)))}\."):
        read_graph(tmp_path)
    m = tmp_path / "bad.mtx"
    m.write_text("not a matrix market file\n")
    with pytest.raises(ValueError, match="must be a Matrix Market file"):
        read_graph(m)


@pytest.mark.parametrize("n", [3, 5])
def test_dense_adjacency_file_read_as_matrix(tmp_path, n):
    a = np.zeros((n, n), dtype=int)
    for i in range(n - 1):
        a[i, i + 1] = a[i + 1, i] = 1  # a path
    a[0, n - 1] = a[n - 1, 0] = 1  # closed into a cycle
    for sep, name in ((" ", "adj.txt"), (",", "adj.csv")):
        p = tmp_path / name
        np.savetxt(p, a, fmt="%d", delimiter=sep)
        g = read_graph(p)
        assert (g.n, g.m) == (n, n)
        assert np.array_equal(g.adj.toarray(), a)


def test_square_edge_lists_stay_edge_lists(tmp_path):
    p = tmp_path / "e.txt"
    p.write_text("0 2\n2 0\n")  # 2 x 2: an edge list (a repeated edge), not a matrix
    g = read_graph(p)
    assert g.labels.tolist() == [0, 2] and g.m == 1
    p.write_text("0 1 2\n1 2 1\n2 3 5\n")  # 3 x 3 but not a hollow symmetric matrix
    assert read_graph(p).m == 3


@pytest.mark.parametrize("n", [3, 5])
def test_dense_adjacency_array_read_as_matrix(n):
    """A dense numpy adjacency follows the text table's rule (December trial, D13: the 3 x 3
    triangle was read as an (m, 3) edge list: n = 2, one self-loop dropped)."""
    a = np.ones((n, n)) - np.eye(n)  # the complete graph
    g = read_graph(a)
    assert (g.n, g.m) == (n, n * (n - 1) // 2)
    assert np.array_equal(g.adj.toarray(), a)
    from optzoo.dks import densest_k_subgraph

    assert len(densest_k_subgraph(a, 2).x) == 2


def test_square_edge_arrays_stay_edge_arrays():
    e = np.array([[0, 1, 2], [1, 2, 1], [2, 3, 5]])  # 3 x 3, not hollow and symmetric
    g = read_graph(e)
    assert (g.n, g.m) == (4, 3)
    with pytest.raises(ValueError, match=r"'graph' argument of read_graph must be an \(m, 2\) or "
                                         r"\(m, 3\) edge array"):
        read_graph(np.arange(16.0).reshape(4, 4) + 1)  # 4 x 4, neither symmetric nor hollow
