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
