"""E3 of the spec for one seed: fine-tuning the tinylm ``icl`` checkpoint with first-order SGD
and Adam (``torch.optim``), MeZO (:class:`ZOSGD`, P = 1) and ZO-SGD with P perturbations
(Gaussian; Rademacher too at full), from the same init and on the same batches.

Task (INFERRED, ours). Per seed and stream (``"tune"`` or ``"eval"``, derived from the seed by
key, so tuning never sees the evaluation stream): ONE rule of the ``pretrain`` family
(y = x_j XOR flip) asked zero-shot, i.e. the prompt is the query's features only, with no
demonstrations. The checkpoint was pre-trained to read the rule from demonstrations, so
zero-shot it sits at chance and fine-tuning must put the rule into the weights (the shift).
Of the 64 query inputs, ``heldout_inputs`` (half of each label) are never trained on; the
held-out set is each of them once. Training batches are ``batch`` random training queries, the
same batch at step t for every method. The loss is the cross-entropy of the two label words
(L0, L1) at the last position; held-out accuracy and loss use the same two words. The pilot
(docs/papers/zo_sgd.md) shows why not the XOR family with demonstrations: no method left
chance there.

Learning rates: each method on its own log-spaced grid of the SAME size and ratio, tuned on
the tune stream (``tune_steps`` steps; lowest held-out loss AUC, the mean over the run's
evaluations). A run whose held-out loss turns non-finite or exceeds ``DIVERGE_FACTOR`` times
its initial one has diverged (it stops; +inf in tuning).

Tracking (claim ``training``): from the same init and batches, SGD, MeZO and ZO-SGD (P) run
``track_steps`` steps at ONE learning rate, the one tuned for ZO-SGD (P);
Δz = log π_K − log π_0 of the two label words on the held-out prompts, and cos(Δz_ZO, Δz_SGD).
The judged numbers are cos(P) and cos(P) − cos(P = 1), paired per seed.

One-step prediction (finding): the first ZO-SGD (P) step's realised Δ log π on the held-out
prompts against :func:`one_step_prediction` with the ZO kernel of that step's own directions
(JVP, float64), and the first SGD step against the exact first-order prediction.

Costs are counted in forward passes: a ZO step is 2P forwards (counted from the closure
calls), a first-order step 3 forward-equivalents (one forward, one backward of about two).
Evaluation forwards are not counted (every method gets the same ones).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch

from optzoo._core.rng import derive_seed
from optzoo.tinylm import icl_eval_set, load_tiny_lm
from optzoo.zo_sgd import ZOSGD, label_logits, one_step_prediction, zo_projections

LABELS = (3, 4)  # token ids of L0, L1 in the icl vocabulary
N_FEATURES = 6  # the icl checkpoint's vocabulary has tokens for 6 features
FO_FORWARDS = 3  # forward-equivalents of one first-order step (forward + backward)
DIVERGE_FACTOR = 10.0  # a run whose held-out loss exceeds 10x its initial one has diverged

_BASE: dict = {}


@dataclass(frozen=True)
class TrainConfig:
    """E3's scale. ``lr_low``: (method, lowest lr of its grid); every grid has ``grid_size``
    points spaced by ``grid_ratio``."""

    family: str = "pretrain"
    pool_queries: int = 512
    heldout_inputs: int = 24
    batch: int = 8
    steps: int = 60
    tune_steps: int = 30
    track_steps: int = 10
    eval_every: int = 10
    grid_size: int = 5
    grid_ratio: float = 10 ** 0.5
    methods: tuple = ("sgd", "adam", "mezo", "zo_gaussian")
    lr_low: tuple = (("sgd", 1e-2), ("adam", 1e-4), ("mezo", 1e-3), ("zo_gaussian", 1e-3),
                     ("zo_rademacher", 1e-3))
    zo_perturbations: int = 16
    zo_eps: float = 1e-3

    def low(self, method: str) -> float:
        return dict(self.lr_low)[method]


def base_model():
    """The committed ``icl`` checkpoint (loaded once per process; every run deep-copies it)."""
    if "icl" not in _BASE:
        model, _ = load_tiny_lm("icl")
        _BASE["icl"] = model.eval()
    return _BASE["icl"]


def lr_grid(low: float, size: int, ratio: float) -> list[float]:
    """``size`` log-spaced learning rates ``low * ratio**i`` (every method: same size, ratio)."""
    return [float(low * ratio ** i) for i in range(size)]


def cosine(a, b) -> float:
    """cos of two flattened vectors; 0 when either is zero, NaN when either is not finite."""
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("nan")
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def tracking_cosine(logp0, logp_a, logp_b) -> float:
    """The function-space tracking measure: cos(Δz_a, Δz_b) with Δz = log π − log π_0 on the
    held-out prompts (any shape; flattened). Identical updates give 1, opposite ones −1."""
    z0 = np.asarray(logp0, dtype=float)
    return cosine(np.asarray(logp_a, dtype=float) - z0, np.asarray(logp_b, dtype=float) - z0)


def make_stream(cfg, seed: int, stream: str) -> dict:
    """The rule, training queries and held-out prompts of one stream (``"tune"`` or ``"eval"``).

    One rule of ``cfg.family`` per stream, zero-shot prompts (the query's features only). The
    held-out inputs are label-balanced (half of each label), so the training inputs are too:
    an unbalanced split would let the label frequency of the training inputs (learnt first)
    anti-generalise to the held-out ones (seen in the pilot, see the docs)."""
    s = derive_seed(seed, "e3", stream) % 2 ** 31
    b = icl_eval_set(1, k=0, n_queries=cfg.pool_queries, family=cfg.family,
                     n_features=N_FEATURES, seed=s)
    codes = b.features[:, 0] @ (2 ** np.arange(N_FEATURES))
    first = {}  # input code -> first pool row with it
    for r, c in enumerate(codes.tolist()):
        first.setdefault(c, r)
    present = np.array(sorted(first))
    label = b.labels[[first[c] for c in present]]
    rng = np.random.default_rng(derive_seed(seed, "e3", stream, "split"))
    half = cfg.heldout_inputs // 2
    held = set()
    for v in (0, 1):
        pool = present[label == v]
        if len(pool) <= half:
            raise ValueError(f"make_stream: heldout_inputs must leave training inputs of both "
                             f"labels; got heldout_inputs={cfg.heldout_inputs}")
        held |= set(rng.choice(pool, size=half, replace=False).tolist())
    is_held = np.isin(codes, list(held))
    ids = torch.as_tensor(b.input_ids)
    y = torch.as_tensor(b.labels, dtype=torch.long)
    return {"seed": s, "stream": stream, "ids": ids, "y": y, "rule": b.rules[0].tolist(),
            "train_rows": np.flatnonzero(~is_held),
            "eval_rows": np.array(sorted(first[c] for c in held)),
            "batch_key": derive_seed(seed, "e3", stream, "batches"),
            "dir_seed": derive_seed(seed, "e3", stream, "directions") % 2 ** 31}


def batch_rows(data: dict, step: int, size: int) -> np.ndarray:
    """The training rows of ``step`` (the same for every method of the stream)."""
    rng = np.random.default_rng(derive_seed(data["batch_key"], step))
    return rng.choice(data["train_rows"], size=size, replace=False)


def label_logp(model, ids) -> torch.Tensor:
    """log π over the two label words at the last position, (N, 2)."""
    with torch.no_grad():
        z = model(ids, use_cache=False).logits[:, -1, list(LABELS)]
    return torch.log_softmax(z.double(), -1)


def evaluate(model, data: dict) -> dict:
    rows = data["eval_rows"]
    lp = label_logp(model, data["ids"][rows])
    y = data["y"][rows]
    loss = float(-lp[torch.arange(len(rows)), y].mean())
    acc = float((lp.argmax(-1) == y).double().mean())
    return {"loss": loss if math.isfinite(loss) else None, "acc": acc, "logp": lp.numpy()}


def _loss(model, ids, y):
    z = model(ids, use_cache=False).logits[:, -1, list(LABELS)]
    return torch.nn.functional.cross_entropy(z, y)


def train(cfg, data: dict, method: str, lr: float, steps: int, *, eval_every: int | None = None,
          first_step: bool = False) -> dict:
    """One run of ``method`` at ``lr`` for ``steps`` steps on ``data``'s batch stream."""
    model = copy.deepcopy(base_model())
    ids, y = data["ids"], data["y"]
    zo = method.startswith("zo") or method == "mezo"
    if zo:
        for p in model.parameters():
            p.requires_grad_(False)
        P = 1 if method == "mezo" else cfg.zo_perturbations
        dist = "rademacher" if method.endswith("rademacher") else "gaussian"
        opt = ZOSGD(model.parameters(), lr=lr, eps=cfg.zo_eps, num_perturbations=P,
                    distribution=dist, seed=data["dir_seed"])
    else:
        cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[method]
        opt = cls(model.parameters(), lr=lr)
    e0 = evaluate(model, data)
    curve = {"step": [0], "forwards": [0], "acc": [e0["acc"]], "loss": [e0["loss"]]}
    forwards, diverged = 0, False
    first = None
    for t in range(steps):
        rows = torch.as_tensor(batch_rows(data, t, cfg.batch))
        xb, yb = ids[rows], y[rows]
        if zo:
            calls = [0]

            def closure(xb=xb, yb=yb, calls=calls):
                calls[0] += 1
                return _loss(model, xb, yb)

            opt.step(closure)
            forwards += calls[0]
        else:
            opt.zero_grad(set_to_none=True)
            loss = _loss(model, xb, yb)
            if not torch.isfinite(loss):
                diverged = True
                break
            loss.backward()
            opt.step()
            forwards += FO_FORWARDS
        if first_step and t == 0:
            first = evaluate(model, data)["logp"]
        last = t + 1 == steps
        if last or (eval_every and (t + 1) % eval_every == 0):
            e = evaluate(model, data)
            curve["step"].append(t + 1)
            curve["forwards"].append(forwards)
            curve["acc"].append(e["acc"])
            curve["loss"].append(e["loss"])
            if e["loss"] is None or e["loss"] > DIVERGE_FACTOR * e0["loss"]:
                diverged = True
                break
    end = evaluate(model, data)
    later = curve["loss"][1:]
    auc = float(np.mean(later)) if later and not diverged else None
    out = {"method": method, "lr": lr, "steps": steps, "forwards": forwards, "curve": curve,
           "final_loss": end["loss"], "final_acc": end["acc"], "diverged": diverged, "auc": auc,
           "logp0": e0["logp"], "logp": end["logp"]}
    if first is not None:
        out["logp1"] = first
    return out


def tune(cfg, data: dict, method: str, low: float, progress) -> dict:
    """Grid search on the tune stream: the lr with the lowest held-out loss AUC of the tune
    stream (the mean over the run's evaluations after step 0, every ``eval_every`` steps and the
    last; a diverged run loses; ties: the first; every run diverged: the grid's first lr), by
    :func:`optzoo.repro.tuning.select`. Returns the chosen lr, every grid point's score (None:
    diverged) and the :class:`~optzoo.repro.tuning.Choice`."""
    from optzoo.repro.tuning import select

    grid = lr_grid(low, cfg.grid_size, cfg.grid_ratio)
    losses = [train(cfg, data, method, lr, cfg.tune_steps, eval_every=cfg.eval_every)["auc"]
              for lr in grid]
    progress.advance()
    choice = select(grid, [np.nan if v is None else v for v in losses], stream="tune", arm=method,
                    knob="lr", if_all_nonfinite="first", eval_budget=cfg.tune_steps, budget_unit="steps")
    return {"grid": grid, "losses": losses, "lr": choice.value,
            "edge": not choice.fallback and choice.at_edge, "choice": choice}


def one_step_check(cfg, data: dict, zo_run: dict, sgd_run: dict, lr: float) -> dict:
    """Predicted vs realised Δ log π of the first step (held-out prompts).

    ZO: :func:`one_step_prediction` with K_ZO from the first step's own P directions
    (:func:`zo_projections` draws ZOSGD's step-0 directions for the same seed; JVP, float64).
    FO: the exact first-order prediction −η A_o J_o g (one float64 JVP along the exact
    gradient g of the first batch; A_o = I − 1π_oᵀ), the same quantity as −η A_o K G_u.
    """
    from torch.func import functional_call, jvp, vjp

    from optzoo.zo_sgd.repro.kernels import _float64

    model = base_model()
    ids, y = data["ids"], data["y"]
    ro = torch.as_tensor(data["eval_rows"])
    ru = torch.as_tensor(batch_rows(data, 0, cfg.batch))
    xo, xu, yu = ids[ro], ids[ru], y[ru]
    No, Nu = len(ro), len(ru)
    fn = label_logits(list(LABELS))
    m = _float64(model)
    params = {n: p.detach() for n, p in m.named_parameters()}

    def z_of(p, x):
        return fn(functional_call(m, p, (x,)))

    zu = z_of(params, xu)
    G = (torch.softmax(zu, 1) - torch.nn.functional.one_hot(yu, 2).double()) / Nu  # dL/dz, mean CE
    pi_o = torch.softmax(z_of(params, xo), 1)
    proj = zo_projections(model, torch.cat([xo, xu]), num_perturbations=zo_run["P"],
                          output_fn=fn, distribution=zo_run["distribution"], seed=data["dir_seed"])
    rows_o = list(range(No * 2))
    rows_u = list(range(No * 2, (No + Nu) * 2))
    pred_zo = one_step_prediction(proj.kernel(None, rows_o, rows_u), pi_o, G, lr).numpy()
    _, pull = vjp(lambda p: z_of(p, xu), params)
    (g,) = pull(G)
    dz = -lr * jvp(lambda p: z_of(p, xo), (params,), (g,))[1]
    pred_fo = (dz - (dz * pi_o).sum(1, keepdim=True)).numpy()
    out = {}
    for name, run, pred in (("zo", zo_run, pred_zo), ("fo", sgd_run, pred_fo)):
        real = np.asarray(run["logp1"]) - np.asarray(run["logp0"])
        nr = float(np.linalg.norm(real))
        out[name] = {"cos": cosine(pred, real),
                     "rel_err": float(np.linalg.norm(pred - real) / nr) if nr > 0 else None}
    return out


def run_training(cfg, seed: int, progress) -> dict:
    """Tune every method on the tune stream, then the evaluation runs and the tracking runs."""
    methods = list(cfg.methods)
    tune_data = make_stream(cfg, seed, "tune")
    tuned = {m: tune(cfg, tune_data, m, cfg.low(m), progress) for m in methods}
    data = make_stream(cfg, seed, "eval")
    zo_name = "zo_gaussian"
    lr_track = tuned[zo_name]["lr"]
    runs = {}
    for m in methods:
        runs[m] = train(cfg, data, m, tuned[m]["lr"], cfg.steps, eval_every=cfg.eval_every)
        progress.advance()
    # tracking runs (track_steps steps from the same init and batches): ZO-SGD (P), MeZO and SGD
    # at ZO-SGD (P)'s tuned lr; MeZO against SGD at MeZO's own lr, and Adam against SGD each at
    # its own lr (a reference for how much two first-order methods agree)
    K = cfg.track_steps

    def short(m, lr, **kw):
        return train(cfg, data, m, lr, K, **kw)

    zo_track = short(zo_name, lr_track, first_step=True)
    sgd_track = short("sgd", lr_track, first_step=True)
    mezo_track = short("mezo", lr_track)
    z0 = zo_track["logp0"]

    def cos(a, b):
        return tracking_cosine(z0, a["logp"], b["logp"])

    track = {"lr": lr_track, "steps": K, "cos_zo": cos(zo_track, sgd_track),
             "cos_mezo": cos(mezo_track, sgd_track),
             "cos_mezo_own_lr": cos(short("mezo", tuned["mezo"]["lr"]),
                                    short("sgd", tuned["mezo"]["lr"])),
             "cos_adam_sgd": cos(short("adam", tuned["adam"]["lr"]),
                                 short("sgd", tuned["sgd"]["lr"])),
             "diverged": any(r["diverged"] for r in (zo_track, sgd_track, mezo_track))}
    if "zo_rademacher" in runs:
        track["cos_zo_rademacher"] = cos(short("zo_rademacher", lr_track), sgd_track)
    progress.advance()
    zo_info = {"P": cfg.zo_perturbations, "distribution": "gaussian"}
    one = one_step_check(cfg, data, {**zo_track, **zo_info}, sgd_track, lr_track)
    progress.advance()
    summary = {m: {k: runs[m][k] for k in ("lr", "steps", "forwards", "curve", "final_loss",
                                           "final_acc", "auc", "diverged")} for m in methods}
    init = {"loss": zo_track["curve"]["loss"][0], "acc": zo_track["curve"]["acc"][0]}
    # the runner writes this with optzoo._core.io.to_jsonable (non-finite floats stay visible)
    return {"tuned": tuned, "runs": summary, "tracking": track, "one_step": one, "init": init,
            "n_eval": int(len(data["eval_rows"])), "n_train_rows": int(len(data["train_rows"])),
            "prompt_tokens": int(data["ids"].shape[1])}


def n_phases(cfg) -> int:
    """Progress steps of :func:`run_training`: one per tuned method, per run, tracking, check."""
    return 2 * len(cfg.methods) + 2
