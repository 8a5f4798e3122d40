"""E3: scikit-learn's digits (1,797 x 64, shipped with scikit-learn, nothing downloaded).

MLP 64 -> 128 -> 128 -> 10 (ReLU), cross-entropy, minibatch SGD (batch 64) for a fixed number
of steps. A 30% test set is held out per seed and never used for tuning; every family gets the
same number of configurations, tuned on the VALIDATION cross-entropy of a 70/30 split of the
remaining 70% (its own initialisation and batch order); the chosen configuration is then
trained once on the whole 70% (the evaluation initialisation and order) and measured on the
held-out 30%: cross-entropy (the claim's metric) and accuracy (reported beside it), with the
final training cross-entropy.

The muP reference is the real ``mup`` package when it imports (``mup.MuReadout`` readout,
``mup.set_base_shapes`` against a width-32 base model, ``mup.MuSGD``); without it, a labelled
stand-in with the same rules (:func:`optzoo.stackelberg.mup_sgd_param_groups`, the readout
input scaled by 1 / width_mult, and set_base_shapes' init rescaling) is used. The layer-decay
reference is always the stand-in: timm 1.0.31 does not import without torchvision.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import torch
from torch import nn

from optzoo._core.rng import np_rng, torch_generator
from optzoo.stackelberg import (
    layer_decay_param_groups,
    mup_sgd_param_groups,
    stackelberg_param_groups,
)

__all__ = ["LRS", "MLP", "grids", "heldout_splits", "load_split", "mup_impl", "mup_optimizer", "run_digits",
           "train_digits", "train_sgd_family"]

LOSS_CAP = 10.0  # a diverged run's loss (above log 10 = 2.30, the loss of a uniform guess)
WIDTH = 128
MUP_BASE_WIDTH = 32  # muP base width (INFERRED); width multiplier 128 / 32 = 4
MUP_R = WIDTH / MUP_BASE_WIDTH


@functools.lru_cache(maxsize=1)
def mup_impl() -> str:
    """Which muP reference the reproduction uses: ``"mup <version>"`` when the real package
    imports, else ``"stand-in"``."""
    try:
        import mup  # noqa: F401
    except ImportError:
        return "stand-in"
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"mup {version('mup')}"
    except PackageNotFoundError:  # importable but without metadata
        return "mup"


class MLP(nn.Module):
    """64 -> width -> width -> 10 ReLU MLP. ``readout`` builds the last layer (``nn.Linear``,
    or ``mup.MuReadout`` for muP); ``readout_scale`` multiplies the readout's input (the
    stand-in for MuReadout's ``x / width_mult``)."""

    def __init__(self, width=WIDTH, readout=nn.Linear, readout_scale=1.0):
        super().__init__()
        self.fc1, self.fc2, self.out = nn.Linear(64, width), nn.Linear(width, width), readout(width, 10)
        self.readout_scale = readout_scale

    def forward(self, x):
        h = torch.relu(self.fc2(torch.relu(self.fc1(x))))
        return self.out(h * self.readout_scale if self.readout_scale != 1.0 else h)


def load_split(seed, key):
    """(X_train, y_train, X_test, y_test): a random 70/30 split of digits keyed by (seed, key)
    (kept for the benchmark and the tests)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    perm = np_rng(seed, "digits_split", key).permutation(len(y))
    n_tr = int(round(0.7 * len(y)))
    X = torch.tensor(X / 16.0, dtype=torch.float32)
    y = torch.tensor(y, dtype=torch.long)
    tr, te = perm[:n_tr], perm[n_tr:]
    return X[tr], y[tr], X[te], y[te]


def heldout_splits(seed):
    """(tuning data, evaluation data) of one seed. A 30% test set is held out and never seen
    while tuning; the other 70% is the evaluation run's training set, and is itself split
    70/30 into the tuning run's training and validation sets. Each is (X_tr, y_tr, X_ho, y_ho)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X / 16.0, dtype=torch.float32)
    y = torch.tensor(y, dtype=torch.long)
    perm = np_rng(seed, "digits_heldout").permutation(len(y))
    n_tr = int(round(0.7 * len(y)))
    tr, te = perm[:n_tr], perm[n_tr:]
    n_fit = int(round(0.7 * n_tr))
    fit, val = tr[:n_fit], tr[n_fit:]
    return (X[fit], y[fit], X[val], y[val]), (X[tr], y[tr], X[te], y[te])


def _init(m, seed, key):
    g = torch_generator(seed, "digits_init", key)
    with torch.no_grad():  # torch's default nn.Linear init, drawn from an explicit generator
        for mod in (m.fc1, m.fc2, m.out):
            b = 1.0 / math.sqrt(mod.in_features)
            mod.weight.uniform_(-b, b, generator=g)
            mod.bias.uniform_(-b, b, generator=g)
    return m


def _model(seed, key, mup=False):
    """The MLP with the seed's init; ``mup=True``: the muP model (the real ``mup`` when it
    imports: MuReadout and set_base_shapes, which rescales the readout by sqrt(r) and the
    biases of width-fan-in layers by sqrt(r); else the stand-in doing the same)."""
    if not mup:
        return _init(MLP(), seed, key)
    if mup_impl() != "stand-in":
        import mup as mup_lib

        m = _init(MLP(readout=mup_lib.MuReadout), seed, key)
        with torch.device("meta"):  # the base model only lends its shapes
            base = MLP(width=MUP_BASE_WIDTH, readout=mup_lib.MuReadout)
        return mup_lib.set_base_shapes(m, {n: p.shape for n, p in base.named_parameters()})
    m = _init(MLP(readout_scale=1.0 / MUP_R), seed, key)
    with torch.no_grad():
        for t in (m.out.weight, m.out.bias, m.fc2.bias):
            t.mul_(MUP_R ** 0.5)
    return m


def mup_optimizer(model, lr):
    """``mup.MuSGD`` on a model from ``_model(..., mup=True)``, or the stand-in's
    ``torch.optim.SGD`` over :func:`mup_sgd_param_groups` when mup is absent."""
    if mup_impl() != "stand-in":
        import mup as mup_lib

        return mup_lib.MuSGD(model.parameters(), lr=lr)
    return torch.optim.SGD(mup_sgd_param_groups(model, lr, width_mult=MUP_R))


LRS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)


def grids(lrs=LRS, references=True):
    """Every family's configurations (kind, body LR, head LR / body LR), equal counts: the
    head-faster and body-faster families are the two triangles of one per-layer LR grid
    (diagonal included), uniform as many LRs log-spaced over the same range; the references
    (Adam, muP, layer decay) as many configurations too."""
    from optzoo.stackelberg.repro.teacher import triangle, uniform_grid

    up, down = triangle(lrs, upper=True), triangle(lrs, upper=False)
    n = len(up)
    fams = {"uniform": [("uniform", v, 1.0) for v in uniform_grid(lrs)],
            "head_fast": [("nonuniform", b, h / b) for b, h in up],
            "body_fast": [("nonuniform", b, h / b) for b, h in down]}
    if references:
        decays = (0.9, 0.75, 0.5, 0.25)
        heads = [float(v) for v in np.geomspace(0.03, 3.0, -(-n // len(decays)))]
        fams.update({
            "adam": [("adam", float(v), 1.0) for v in np.geomspace(1e-4, 3e-2, n)],
            "llrd": [("llrd", h, d) for h in heads for d in decays][:n],
            "mup": [("mup", float(v), 1.0) for v in np.geomspace(0.01, 3.0, n)],
        })
    return fams


def train_digits(conf, data, *, seed, key, steps, batch=64):
    """Train one configuration; returns final train CE (capped), test accuracy, divergence."""
    kind, lr, c = conf
    Xtr, ytr, Xte, yte = data
    model = _model(seed, key, mup=kind == "mup")
    if kind == "uniform":
        opt = torch.optim.SGD(model.parameters(), lr=lr)
    elif kind == "nonuniform":
        with warnings.catch_warnings():  # c < 1 (the body-faster mirror) warns by design
            warnings.simplefilter("ignore", UserWarning)
            opt = torch.optim.SGD(stackelberg_param_groups(model, lr, c, head="out"))
    elif kind == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    elif kind == "llrd":
        opt = torch.optim.SGD(layer_decay_param_groups(model, lr, decay=c))
    elif kind == "mup":
        opt = mup_optimizer(model, lr)
    else:
        raise ValueError(f"unknown configuration kind {kind!r}")
    g = torch_generator(seed, "digits_order", key)
    n = len(ytr)
    order = torch.cat([torch.randperm(n, generator=g) for _ in range(steps * batch // n + 1)])
    lossf = nn.CrossEntropyLoss()
    diverged = False
    for t in range(steps):
        idx = order[t * batch:(t + 1) * batch]
        opt.zero_grad()
        loss = lossf(model(Xtr[idx]), ytr[idx])
        if not math.isfinite(lv := float(loss.detach())) or lv > 1e3:
            diverged = True
            break
        loss.backward()
        opt.step()
    with torch.no_grad():
        full = float(lossf(model(Xtr), ytr)) if not diverged else float("nan")
        out_te = model(Xte)
        tce = float(lossf(out_te, yte)) if not diverged else float("nan")
        acc = float((out_te.argmax(1) == yte).float().mean()) if not diverged else 0.0
    if not (math.isfinite(full) and math.isfinite(tce)) or full > LOSS_CAP:
        diverged, full, tce = True, LOSS_CAP, LOSS_CAP
    return {"loss": full, "test_ce": min(tce, LOSS_CAP), "test_acc": acc, "diverged": diverged}


def _lr_table(confs, seed, key):
    """(C, 6) per-parameter LRs of every SGD configuration, read from the param groups that the
    library (or ``mup.MuSGD``) builds on the template MLP (fc1.w, fc1.b, fc2.w, fc2.b, out.w,
    out.b)."""
    rows = []
    for kind, lr, c in confs:
        m = _model(seed, key, mup=kind == "mup")
        if kind == "uniform":
            groups = [{"params": list(m.parameters()), "lr": lr}]
        elif kind == "nonuniform":
            with warnings.catch_warnings():  # c < 1 (the body-faster mirror) warns by design
                warnings.simplefilter("ignore", UserWarning)
                groups = stackelberg_param_groups(m, lr, c, head="out")
        elif kind == "llrd":
            groups = layer_decay_param_groups(m, lr, decay=c)
        elif kind == "mup":
            groups = mup_optimizer(m, lr).param_groups
        else:
            raise ValueError(f"not an SGD family: {kind!r}")
        by = {id(p): g["lr"] for g in groups for p in g["params"]}
        rows.append([by[id(p)] for p in m.parameters()])
    return torch.tensor(rows, dtype=torch.float32)


def train_sgd_family(confs, data, *, seed, key, steps, batch=64):
    """Every SGD configuration of a family at once: C independent MLPs stacked along a batch
    axis (same init, same batch order), each updated ``p -= lr_{c,p} * grad`` exactly as
    ``torch.optim.SGD`` (or ``mup.MuSGD``) does with the configuration's param groups; muP
    configurations start from the muP init and scale the readout input by 1 / width_mult. A configuration whose loss
    turns non-finite or > 1e3 is frozen and marked diverged. Returns one dict per configuration."""
    Xtr, ytr, Xte, yte = data
    C = len(confs)
    lrs = _lr_table(confs, seed, key)
    mult = torch.tensor([1.0 / MUP_R if k == "mup" else 1.0 for k, _, _ in confs])
    init = {k: [p.detach() for p in _model(seed, key, mup=k == "mup").parameters()]
            for k in {"mup" if k == "mup" else "sp" for k, _, _ in confs}}
    ps = [torch.stack([init["mup" if k == "mup" else "sp"][j] for k, _, _ in confs])
          .requires_grad_(True) for j in range(6)]

    def forward(x):
        w1, b1, w2, b2, w3, b3 = ps
        h = torch.relu(torch.einsum("bi,coi->cbo", x, w1) + b1[:, None])
        h = torch.relu(torch.einsum("cbi,coi->cbo", h, w2) + b2[:, None])
        return torch.einsum("cbi,coi->cbo", h * mult[:, None, None], w3) + b3[:, None]

    g = torch_generator(seed, "digits_order", key)
    n = len(ytr)
    order = torch.cat([torch.randperm(n, generator=g) for _ in range(steps * batch // n + 1)])
    alive = torch.ones(C, dtype=torch.bool)
    for t in range(steps):
        idx = order[t * batch:(t + 1) * batch]
        out = forward(Xtr[idx])
        loss_c = torch.stack([nn.functional.cross_entropy(out[c], ytr[idx]) for c in range(C)])
        with torch.no_grad():
            alive &= torch.isfinite(loss_c) & (loss_c <= 1e3)
        if not bool(alive.any()):
            break
        grads = torch.autograd.grad(torch.where(alive, loss_c, 0.0).sum(), ps)
        with torch.no_grad():
            for j, (p, gr) in enumerate(zip(ps, grads, strict=True)):
                step = (lrs[:, j] * alive).reshape(C, *([1] * (p.ndim - 1)))
                p.sub_(step * torch.nan_to_num(gr))
    res = []
    with torch.no_grad():
        out_tr, out_te = forward(Xtr), forward(Xte)
        for c in range(C):
            full = float(nn.functional.cross_entropy(out_tr[c], ytr)) if alive[c] else float("nan")
            tce = float(nn.functional.cross_entropy(out_te[c], yte)) if alive[c] else float("nan")
            acc = float((out_te[c].argmax(1) == yte).float().mean()) if alive[c] else 0.0
            div = (not bool(alive[c]) or not math.isfinite(full) or not math.isfinite(tce)
                   or full > LOSS_CAP)
            res.append({"loss": LOSS_CAP if div else full, "test_ce": LOSS_CAP if div else min(tce, LOSS_CAP),
                        "test_acc": acc, "diverged": div})
    return res


def run_digits(cfg, seed, progress, Record):
    """One seed of E3: every family tuned on the validation cross-entropy of the tuning split
    (its own initialisation and batch order), the chosen configuration run once on the
    evaluation split (train on the 70%, measure on the held-out 30%)."""
    tune_data, eval_data = heldout_splits(seed)
    from optzoo.repro.tuning import select

    fams = grids(cfg.digits_lrs, references=cfg.digits_references)
    recs = []
    for fam, confs in fams.items():
        if fam == "adam":  # torch.optim.Adam, one configuration at a time
            tune = [train_digits(cf, tune_data, seed=seed, key="tune", steps=cfg.steps) for cf in confs]
        else:
            tune = train_sgd_family(confs, tune_data, seed=seed, key="tune", steps=cfg.steps)
        progress.advance()
        # validation CE; ties: the first in grid order
        ch = select(confs, [t["test_ce"] for t in tune], stream="tune split", arm=fam,
                    knob="(kind, lr_body, ratio)", context="digits", eval_budget=cfg.steps,
                    budget_unit="steps", if_all_nonfinite="first")
        best = ch.index
        recs += ch.to_records()
        kind, lr, c = confs[best]
        ev = train_digits(confs[best], eval_data, seed=seed, key="eval", steps=cfg.steps)
        if ev["diverged"]:
            warnings.warn(f"stackelberg: digits family {fam!r} diverged on the evaluation split "
                          f"(seed {seed}): recorded as NaN", RuntimeWarning, stacklevel=2)
        nan = float("nan")
        recs += [Record("digits", fam, "eval", "test_ce", nan if ev["diverged"] else ev["test_ce"]),
                 Record("digits", fam, "eval", "train_ce", nan if ev["diverged"] else ev["loss"]),
                 Record("digits", fam, "eval", "test_acc", nan if ev["diverged"] else ev["test_acc"]),
                 Record("digits", fam, "tuning", "val_ce", tune[best]["test_ce"]),
                 Record("digits", fam, "tuning", "grid_size", len(confs)),
                 Record("digits", fam, "tuning", "budget", cfg.steps),
                 Record("digits", fam, "tuning", "grid_index", best),
                 Record("digits", fam, "tuning", "lr_body", lr),
                 Record("digits", fam, "tuning", "ratio", c),
                 Record("digits", fam, "tuning", "diverged", sum(t["diverged"] for t in tune))]
    return recs
