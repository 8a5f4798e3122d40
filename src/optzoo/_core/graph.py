"""Graphs: one canonical form and a reader for what users bring (shared by every graph
package: :mod:`optzoo.dks`, :mod:`optzoo.coarsening`).

Every graph solver works on a :class:`Graph`: a symmetric scipy CSR
adjacency with zero diagonal, no duplicate entries, finite non-negative weights and int32
indices where they fit, plus ``labels``, the original node names (``labels[i]`` is the name
of internal node ``i``). :func:`read_graph` builds one from SNAP edge lists (plain or gzip),
Matrix Market files, CSV files (header optional), dense adjacency matrix text files,
networkx graphs, scipy.sparse matrices, (m, 2) or (m, 3) edge arrays and PyG-style 2 x m
torch ``edge_index`` tensors.

Conventions (ours, stated because users will meet them):

* An edge list is undirected: ``u v`` and ``v u`` are the same edge, and repeated edges
  collapse to one. With weights, the largest weight of the repeats is kept.
* A matrix (scipy.sparse, .mtx, networkx ``DiGraph``) is checked for symmetry; with
  ``symmetrize=True`` (default) an asymmetric one becomes ``max(A, A.T)`` entrywise.
* Self-loops are dropped with a warning (no method here uses them; for DkS the diagonal is
  the loading ``lambda``'s job).
* A CSV's first row is a header unless every field in it is a number (then it is an edge).
* A text file or numpy array holding an n x n table of numbers, n >= 4, symmetric or with a
  zero diagonal (for n = 3: both), is a dense adjacency matrix, not an edge list: edge lists
  have 2 or 3 columns, and a 3-column list never writes an edge of weight 0.
* Node ids that are not ``0..n-1`` are mapped to ``0..n-1`` in sorted order (edge files) or
  in the graph's own node order (networkx); ``labels`` keeps the mapping.
"""

from __future__ import annotations

import gzip
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from optzoo._core.validation import fail

__all__ = ["Graph", "read_graph", "edges_within", "GRAPH_KINDS"]

GRAPH_KINDS = (
    "a Graph, a path to an edge list (.txt/.gz/.mtx/.csv), a networkx graph, a scipy.sparse "
    "matrix, an (m, 2) or (m, 3) edge array or a 2 x m torch edge_index tensor"
)


@dataclass(frozen=True, eq=False)
class Graph:
    """An undirected graph in the canonical form every DkS solver uses.

    ``adj``: symmetric ``scipy.sparse.csr_array``-compatible matrix (float64 data, zero
    diagonal, sorted indices, no duplicates). ``labels``: original node names, one per row.
    ``weighted``: whether any weight differs from 1. ``source``: where it came from.
    """

    adj: Any
    labels: np.ndarray
    weighted: bool = False
    source: str = ""

    @property
    def n(self) -> int:
        return int(self.adj.shape[0])

    @property
    def m(self) -> int:
        """Number of undirected edges."""
        return int(self.adj.nnz // 2)

    @property
    def max_weight(self) -> float:
        return float(self.adj.data.max()) if self.adj.nnz else 0.0

    @property
    def degrees(self) -> np.ndarray:
        return np.diff(self.adj.indptr)

    def __repr__(self) -> str:
        kind = "weighted" if self.weighted else "unweighted"
        src = f", source={self.source!r}" if self.source else ""
        return f"Graph(n={self.n}, m={self.m}, {kind}{src})"


def edges_within(adj, nodes: np.ndarray) -> float:
    """Total edge weight inside ``nodes`` (|E(S)| for 0/1 graphs), recomputed from ``adj``."""
    nodes = np.asarray(nodes, dtype=np.int64)
    if nodes.size < 2:
        return 0.0
    mask = np.zeros(adj.shape[0], dtype=bool)
    mask[nodes] = True
    # Rows of S, then keep the entries whose column is also in S; each edge counted twice.
    lo, hi = adj.indptr[nodes], adj.indptr[nodes + 1]
    idx = _ranges(lo, hi)
    inside = mask[adj.indices[idx]]
    return float(adj.data[idx][inside].sum()) / 2.0


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(lo[i], hi[i])`` without a Python loop."""
    lens = (hi - lo).astype(np.int64)
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(lo.astype(np.int64) - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
    return starts + np.arange(total, dtype=np.int64)


# --------------------------------------------------------------------------- construction


def _from_edges(u, v, w, n: int | None, labels, *, owner: str, source: str) -> Graph:
    """Canonical graph from undirected integer edges ``u, v`` in ``0..n-1``."""
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    if n is None:
        n = int(max(u.max(initial=-1), v.max(initial=-1))) + 1
    loops = u == v
    if loops.any():
        warnings.warn(
            f"{owner}: dropped {int(loops.sum())} self-loop(s); optzoo's graph methods work "
            "on simple graphs.",
            UserWarning,
            stacklevel=3,
        )
        keep = ~loops
        u, v = u[keep], v[keep]
        w = None if w is None else w[keep]
    if u.size == 0:
        fail("graph", owner, "a graph with at least one edge (after dropping self-loops)",
             f"{n} nodes and 0 edges")
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    key = lo * n + hi
    if w is None:
        key = np.sort(key)  # sort + mask: np.unique's hash path is ~10x slower on 10^7 keys
        first = np.ones(key.size, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        key = key[first]
        data = np.ones(key.size)
        weighted = False
    else:
        # Repeats keep their largest weight: sort by (key, weight) and take each key's last.
        order = np.lexsort((w, key))
        key, w = key[order], w[order]
        last = np.ones(key.size, dtype=bool)
        last[:-1] = key[1:] != key[:-1]
        key, data = key[last], np.asarray(w[last], dtype=np.float64)
        zero = data == 0
        if zero.any():  # a zero weight is no edge
            key, data = key[~zero], data[~zero]
        if key.size == 0:
            fail("graph", owner, "a graph with at least one edge of positive weight", "all weights 0")
        weighted = bool((data != 1.0).any())
    lo, hi = key // n, key % n
    rows = np.concatenate([lo, hi])
    cols = np.concatenate([hi, lo])
    vals = np.concatenate([data, data])
    idx_dtype = np.int32 if max(n, rows.size) < 2**31 - 1 else np.int64
    adj = sp.csr_matrix(
        (vals, (rows.astype(idx_dtype), cols.astype(idx_dtype))), shape=(n, n)
    )
    adj.sum_duplicates()  # sorts indices; there are no duplicates left to sum
    adj.indices = adj.indices.astype(idx_dtype, copy=False)
    adj.indptr = adj.indptr.astype(idx_dtype, copy=False)
    if labels is None:
        labels = np.arange(n)
    return Graph(adj, np.asarray(labels), weighted, source)


def _check_weights(w: np.ndarray, *, owner: str, where: str = "") -> None:
    bad = ~np.isfinite(w)
    if bad.any():
        fail("graph", owner, "finite edge weights" + where, float(w[np.flatnonzero(bad)[0]]))
    neg = w < 0
    if neg.any():
        fail("graph", owner, "non-negative edge weights" + where, float(w[np.flatnonzero(neg)[0]]))


def _from_matrix(mat, *, symmetrize: bool, owner: str, labels=None, source: str = "") -> Graph:
    mat = sp.coo_matrix(mat)
    if mat.shape[0] != mat.shape[1]:
        fail("graph", owner, "a square adjacency matrix", f"shape {mat.shape}")
    n = mat.shape[0]
    data = np.asarray(mat.data, dtype=np.float64)
    csr = sp.csr_matrix((data, (mat.row, mat.col)), shape=(n, n))
    # A COO matrix means the SUM of its duplicate entries (scipy's rule), and networkx writes
    # an undirected self-loop as +w, +w, -w at (i, i): check the weights after summing.
    csr.sum_duplicates()
    csr.eliminate_zeros()
    _check_weights(csr.data, owner=owner)
    asym = csr - csr.T
    if asym.count_nonzero():
        if not symmetrize:
            fail("graph", owner, "a symmetric adjacency matrix (or pass symmetrize=True)",
                 f"an asymmetric matrix with {asym.count_nonzero() // 2} mismatched pair(s)")
        csr = csr.maximum(csr.T).tocsr()
    coo = csr.tocoo()
    upper = coo.row <= coo.col  # diagonal kept here so _from_edges can warn about it
    u, v, w = coo.row[upper], coo.col[upper], coo.data[upper]
    unweighted = bool((w == 1.0).all())
    return _from_edges(u, v, None if unweighted else w, n, labels, owner=owner, source=source)


def _map_ids(ids: np.ndarray):
    """Map arbitrary ids to 0..n-1 in sorted order; identity when already 0..n-1."""
    if ids.dtype.kind in "iu" and ids.size and ids.min() >= 0 and ids.max() <= 4 * ids.size + 1000:
        # Small non-negative ints: a presence table maps them in O(n + m), no sort needed.
        hi = int(ids.max())
        present = np.zeros(hi + 1, dtype=bool)
        present[ids.ravel()] = True
        if present.all():
            return ids, np.arange(hi + 1)
        labels = np.flatnonzero(present)
        new_id = np.cumsum(present) - 1
        return new_id[ids], labels
    labels, inv = np.unique(ids.ravel(), return_inverse=True)
    return inv.reshape(ids.shape), labels


# --------------------------------------------------------------------------- text files


def _read_text(path: Path, *, owner: str) -> str:
    if path.suffix == ".gz":
        try:
            with gzip.open(path, "rb") as fh:
                raw = fh.read()
        except (gzip.BadGzipFile, EOFError, OSError) as e:
            fail("graph", owner, f"a gzip-compressed file, as its name ends in .gz (gzip: {e})",
                 str(path))
    else:
        raw = path.read_bytes()
    return raw.decode("utf-8", errors="replace")


def _parse_table(text: str, path: Path, *, delimiter: str | None, comments: str,
                 header: bool, owner: str, int_ids: bool):
    """Vectorised parse of ``u v [w]`` rows; errors name the file and the 1-based line.

    Returns ``(ids, weights, None)``, or ``(None, None, matrix)`` when the file is a dense
    adjacency matrix (see :func:`_dense_table`).
    """
    lines = text.splitlines()
    keep = [i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith(comments)]
    head = None
    if header and keep and not _all_numbers(lines[keep[0]].split(delimiter)):
        # A first row of numbers is an edge, not a header: a CSV written without one would
        # otherwise lose its first edge without a word.
        head = [h.strip().lower() for h in lines[keep[0]].split(delimiter)]
        keep = keep[1:]
    if not keep:
        fail("graph", owner, "a file with at least one edge line", str(path))
    body = "\n".join(lines[i] for i in keep)
    if delimiter is not None:
        body = body.replace(delimiter, " ")
    tokens = body.split()
    ncol = len(lines[keep[0]].split(delimiter))
    if head is None and ncol == len(keep) and len(tokens) == ncol * ncol:
        dense = _dense_table(tokens, ncol)
        if dense is not None:
            return None, None, dense
    if ncol not in (2, 3) or len(tokens) != ncol * len(keep):
        for i in keep:
            c = len(lines[i].split(delimiter))
            if c != ncol or c not in (2, 3):
                raise ValueError(
                    f"{path}, line {i + 1}: expected 'u v' or 'u v weight' "
                    f"({ncol if ncol in (2, 3) else 2} columns), got {c}: {lines[i].strip()[:60]!r}"
                )
    table = np.array(tokens).reshape(len(keep), ncol)
    if ncol == 3 and head is not None and "weight" in head:
        wcol = head.index("weight")
        cols = [c for c in range(3) if c != wcol]
    else:
        wcol, cols = (2 if ncol == 3 else None), [0, 1]
    ids = table[:, cols]
    try:
        ids = ids.astype(np.int64)
    except ValueError:
        if int_ids:
            for r, i in enumerate(keep):
                for t in table[r, cols]:
                    try:
                        int(t)
                    except ValueError:
                        raise ValueError(
                            f"{path}, line {i + 1}: node ids must be integers, got {t!r}"
                        ) from None
    w = None
    if wcol is not None:
        try:
            w = table[:, wcol].astype(np.float64)
        except ValueError:
            for r, i in enumerate(keep):
                try:
                    float(table[r, wcol])
                except ValueError:
                    raise ValueError(
                        f"{path}, line {i + 1}: the weight must be a number, got {table[r, wcol]!r}"
                    ) from None
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{path}, line {keep[r] + 1}: edge weights must be finite and non-negative, "
                f"got {w[r]!r}"
            )
    return ids, w, None


def _all_numbers(fields) -> bool:
    try:
        for f in fields:
            float(f)
    except ValueError:
        return False
    return bool(fields)


def _dense_table(tokens, n: int):
    """The n x n table as a dense adjacency matrix, or None when it reads as an edge list.

    An n x n table of numbers with n >= 4 that is symmetric or has a zero diagonal is a
    matrix: edge lists have 2 or 3 columns (any other table keeps the column-count error).
    For n = 3 it must be both: read as ``u v w`` rows, its third row would then be an edge of
    weight 0, which no edge list writes. A 2 x 2 table stays an edge list.
    """
    if n < 3:
        return None
    try:
        mat = np.array(tokens, dtype=np.float64).reshape(n, n)
    except ValueError:
        return None
    symmetric, hollow = np.array_equal(mat, mat.T), not mat.diagonal().any()
    if (symmetric and hollow) or (n >= 4 and (symmetric or hollow)):
        return mat
    return None


def _read_path(path: Path, *, symmetrize: bool, owner: str) -> Graph:
    if not path.exists():
        raise FileNotFoundError(f"{owner}: no such graph file: {str(path)!r}")
    if not path.is_file():
        fail("graph", owner, "a path to a graph file (not a directory)", str(path))
    name = path.name.lower()
    if name.endswith((".mtx", ".mtx.gz")):
        import scipy.io

        try:
            mat = scipy.io.mmread(str(path))
        except (ValueError, OSError, EOFError) as e:
            fail("graph", owner, f"a Matrix Market file, as its name ends in .mtx ({e})",
                 str(path))
        return _from_matrix(mat, symmetrize=symmetrize, owner=owner, source=str(path))
    is_csv = name.endswith((".csv", ".csv.gz"))
    text = _read_text(path, owner=owner)
    ids, w, dense = _parse_table(
        text, path, delimiter="," if is_csv else None, comments="#", header=is_csv,
        owner=owner, int_ids=not is_csv,
    )
    if dense is not None:
        return _from_matrix(sp.coo_matrix(dense), symmetrize=symmetrize, owner=owner,
                            source=str(path))
    mapped, labels = _map_ids(ids)
    return _from_edges(mapped[:, 0], mapped[:, 1], w, len(labels), labels, owner=owner,
                       source=str(path))


# --------------------------------------------------------------------------- objects


def _from_networkx(g, *, symmetrize: bool, owner: str) -> Graph:
    import networkx as nx

    nodes = list(g.nodes)
    if not nodes:
        fail("graph", owner, "a graph with at least one edge", "an empty networkx graph")
    has_w = any("weight" in d for _, _, d in g.edges(data=True))
    mat = nx.to_scipy_sparse_array(g, nodelist=nodes, weight="weight" if has_w else None,
                                   format="coo")
    try:
        labels = np.asarray(nodes)
        if labels.ndim != 1:
            raise ValueError
    except ValueError:
        labels = np.empty(len(nodes), dtype=object)
        labels[:] = nodes
    if g.is_directed():
        return _from_matrix(mat, symmetrize=symmetrize, owner=owner, labels=labels,
                            source=type(g).__name__)
    return _from_matrix(mat, symmetrize=True, owner=owner, labels=labels,
                        source=type(g).__name__)


def _from_edge_array(arr: np.ndarray, *, owner: str, source: str) -> Graph:
    if arr.ndim != 2 or arr.shape[1] not in (2, 3) or arr.shape[0] == 0:
        fail("graph", owner, "an (m, 2) or (m, 3) edge array with m >= 1",
             f"an array of shape {arr.shape}")
    if arr.dtype.kind not in "iuf":
        fail("graph", owner, "a numeric edge array", f"dtype {arr.dtype}")
    ids = arr[:, :2]
    w = None
    if arr.shape[1] == 3:
        w = np.asarray(arr[:, 2], dtype=np.float64)
        _check_weights(w, owner=owner)
    if ids.dtype.kind == "f":
        if not np.isfinite(ids).all() or (ids != np.round(ids)).any():
            fail("graph", owner, "integer node ids in the first two columns",
                 "non-integer values")
        ids = ids.astype(np.int64)
    mapped, labels = _map_ids(ids)
    return _from_edges(mapped[:, 0], mapped[:, 1], w, len(labels), labels, owner=owner,
                       source=source)


def _from_torch(t, *, symmetrize: bool, owner: str) -> Graph:
    if t.is_sparse or t.layout.__repr__() in ("torch.sparse_csr", "torch.sparse_csc"):
        coo = t.to_sparse_coo().coalesce().cpu()
        idx = coo.indices().numpy()
        vals = coo.values().double().numpy()
        mat = sp.coo_matrix((vals, (idx[0], idx[1])), shape=tuple(coo.shape))
        return _from_matrix(mat, symmetrize=symmetrize, owner=owner, source="torch sparse")
    arr = t.detach().cpu().numpy()
    if arr.ndim == 2 and arr.shape[0] == 2 and arr.shape[1] != 2:
        arr = arr.T  # PyG edge_index: 2 x m
    return _from_edge_array(arr, owner=owner, source="torch edge tensor")


def read_graph(source: Any, *, symmetrize: bool = True, owner: str = "read_graph") -> Graph:
    """Build a :class:`Graph` from a file path or an in-memory graph.

    Parameters
    ----------
    source : str or os.PathLike (SNAP edge list ``u v [w]`` with ``#`` comments, optionally
        ``.gz``; Matrix Market ``.mtx``; ``.csv``, header optional, optional ``weight``
        column; a dense n x n adjacency matrix as text),
        a networkx graph (node labels kept), a scipy.sparse matrix, an (m, 2) / (m, 3) numpy
        edge array or a dense n x n numpy adjacency matrix (the text table's rule above), a
        torch edge tensor ((m, 2) or PyG 2 x m) or sparse tensor, or a Graph.
    symmetrize : make an asymmetric matrix symmetric as ``max(A, A.T)``; with ``False`` an
        asymmetric matrix raises ``ValueError``. Edge lists are always undirected.

    Examples
    --------
    >>> import numpy as np
    >>> g = read_graph(np.array([[10, 20], [20, 30], [30, 10], [20, 10]]))
    >>> g.n, g.m, g.labels.tolist()
    (3, 3, [10, 20, 30])
    """
    if isinstance(source, Graph):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _read_path(Path(source), symmetrize=symmetrize, owner=owner)
    if sp.issparse(source):
        return _from_matrix(source, symmetrize=symmetrize, owner=owner, source="scipy.sparse")
    if isinstance(source, np.ndarray):
        n = source.shape[0] if source.ndim == 2 and source.shape[0] == source.shape[1] else 0
        dense = _dense_table(source.ravel(), n) if source.dtype.kind in "iuf" else None
        if dense is not None:  # the same rule as a text table: see the module docstring
            return _from_matrix(sp.coo_matrix(dense), symmetrize=symmetrize, owner=owner,
                                source="dense adjacency array")
        return _from_edge_array(source, owner=owner, source="edge array")
    mod = type(source).__module__ or ""
    if mod.startswith("networkx"):
        return _from_networkx(source, symmetrize=symmetrize, owner=owner)
    if mod.startswith("torch"):
        return _from_torch(source, symmetrize=symmetrize, owner=owner)
    raise TypeError(
        f"The 'graph' argument of {owner} must be {GRAPH_KINDS}. Got {type(source).__name__}."
    )
