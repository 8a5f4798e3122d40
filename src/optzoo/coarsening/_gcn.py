"""A 2-layer GCN in plain torch and the FGC evaluation protocol (train coarse, test full).

Protocol (Kumar et al. 2023, used by the official code): train on the coarse graph
(A_c = C-bar^T A C-bar, X_c = mean features of each supernode, label = majority label of
the supernode's *training* nodes; supernodes without training nodes carry no loss), then
run the trained weights on the original graph and score validation / test nodes.
Hyperparameters (weight decay) are chosen on validation accuracy, never on test.
"""

# ruff: noqa: B023  (closures here are called at once, inside the loop that defines them)

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["coarse_gcn_eval"]


def _norm_adj_torch(A, dense: bool):
    import torch

    A = sp.csr_matrix(A) + sp.identity(A.shape[0], format="csr")
    d = np.asarray(A.sum(axis=1)).ravel()
    Dm = sp.diags(1.0 / np.sqrt(d))
    N = (Dm @ A @ Dm).tocoo()
    if dense:
        return torch.tensor(N.toarray(), dtype=torch.float32)
    idx = torch.tensor(np.vstack([N.row, N.col]), dtype=torch.long)
    return torch.sparse_coo_tensor(idx, torch.tensor(N.data, dtype=torch.float32), N.shape)


def coarse_gcn_eval(A, X, y, assign, split, *, n_classes, epochs=100, hidden=64,
                    dropout=0.5, lr=0.01, weight_decays=(5e-4, 5e-3), seed=0):
    """Train on the coarse graph given by the hard ``assign``; return (val, test) accuracy
    in percent for the weight decay with the best validation accuracy.

    ``split``: per-node role array (0 train, 1 val, 2 test). ``assign=None`` trains on the
    full graph (the no-coarsening reference).
    """
    import torch

    from optzoo._core.rng import torch_generator

    X = np.asarray(X, dtype=np.float64)
    p = X.shape[0]
    train = split == 0
    if assign is None:
        Ac, Xc = A, X
        yc = np.where(train, y, -1)
    else:
        k = int(assign.max()) + 1
        Cb = sp.csr_matrix((np.ones(p), (np.arange(p), assign)), shape=(p, k))
        size = np.maximum(np.asarray(Cb.sum(axis=0)).ravel(), 1)
        Ac = (Cb.T @ A @ Cb).tocsr()
        Xc = np.asarray(Cb.T @ X) / size[:, None]
        counts = np.asarray((Cb[train].T @ sp.csr_matrix(
            (np.ones(train.sum()), (np.arange(train.sum()), y[train])),
            shape=(train.sum(), n_classes))).todense())
        yc = np.where(counts.sum(1) > 0, counts.argmax(1), -1)
    Nc = _norm_adj_torch(Ac, dense=Ac.shape[0] <= 2000)
    Nf = _norm_adj_torch(A, dense=False)
    Xc_t = torch.tensor(Xc, dtype=torch.float32)
    Xf_t = torch.tensor(X, dtype=torch.float32)
    yc_t = torch.tensor(yc, dtype=torch.long)
    has = yc_t >= 0
    best = (-1.0, 0.0)
    for wd in weight_decays:
        g = torch_generator(seed, "gcn", wd)
        d_in = X.shape[1]
        W1 = torch.empty(d_in, hidden)
        W2 = torch.empty(hidden, n_classes)
        for W in (W1, W2):  # Glorot uniform, drawn from the explicit generator
            a = float(np.sqrt(6.0 / (W.shape[0] + W.shape[1])))
            W.uniform_(-a, a, generator=g)
        b1, b2 = torch.zeros(hidden), torch.zeros(n_classes)
        params = [t.requires_grad_() for t in (W1, b1, W2, b2)]
        opt = torch.optim.Adam(params, lr=lr, weight_decay=wd)

        def forward(Nm, H, train_mode):
            H = torch.relu(Nm @ (H @ W1) + b1)
            if train_mode:
                keep = torch.rand(H.shape, generator=g) >= dropout
                H = H * keep / (1.0 - dropout)
            return Nm @ (H @ W2) + b2

        for _ in range(epochs):
            opt.zero_grad()
            out = forward(Nc, Xc_t, True)
            loss = torch.nn.functional.cross_entropy(out[has], yc_t[has])
            loss.backward()
            opt.step()
        with torch.no_grad():
            pred = forward(Nf, Xf_t, False).argmax(1).numpy()
        val = 100.0 * float((pred[split == 1] == y[split == 1]).mean())
        test = 100.0 * float((pred[split == 2] == y[split == 2]).mean())
        if val > best[0]:
            best = (val, test)
    return best
