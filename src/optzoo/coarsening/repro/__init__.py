"""Reproduction of "Adapting to Evolving Graphs: A Scalable Framework for Dynamic Coarsening"
(Gupta et al., ICML 2026).

Two kinds of streams:

* **accuracy streams** (contextual SBM with labels, a few hundred nodes): grown by ``n_add``
  nodes per step (DIGC regime), and the same start also deleting ``del_frac`` of the nodes and
  rewiring ``rewire_frac`` of the edges per step (ACNR regime). GCN accuracy on the coarse
  graph and the epsilon-similarity of every method are judged here.
* **scaling streams** (>= 2,000 nodes): ego-facebook (SNAP, shared data folder) grown in BFS
  order with DIGC, and ego-facebook with growth + deletions + rewiring under ACNR (quick: one
  step at 2,000 nodes; full: two at 3,000); at full also a 10^5-node sparse SBM (k = 200),
  one step under DIGC and one with deletions and rewiring under ACNR. Update cost and peak
  memory against FGC from scratch are judged only here, never on the small streams, where
  dense FGC is cheap.

``run`` returns records (one per arm, step and metric); every claim declares its evidence, and
each claim of kind "claim" has a control judged on the same units: ``restart`` (FGC restarted
from scratch at the update's own iteration budget: the reuse of the previous coarsening
removed) for speed and memory, ``naive`` (the previous coarsening reused, new nodes placed by
the naive vote: the update's optimisation removed) for accuracy.

Every method on a stream sees the same events, the same k and the same GCN seeds. Cost is
process CPU time (single-threaded; it does not flip with machine load as wall time does),
measured without tracemalloc; the peak memory comes from a second run under tracemalloc,
capped at two solver iterations (FGC: one), since every iteration allocates the same arrays.
"""

from __future__ import annotations

import copy
import time
import tracemalloc
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo._core.rng import derive_seed, np_rng
from optzoo.coarsening import (
    DynamicCoarsener,
    coarse_features,
    epsilon_certificate,
    fgc,
    hard_assignment,
)
from optzoo.coarsening._gcn import coarse_gcn_eval
from optzoo.coarsening.baselines import heavy_edge_coarsen, louvain_coarsen, naive_incremental
from optzoo.repro.claim import Claim
from optzoo.repro.evidence import Control, Custom, Paired, Record, Universal, as_records
from optzoo.repro.figures import new_figure, save_figure

from .streams import csbm, facebook, growth_events, rewire_events, sparse_sbm

__all__ = ["CLAIMS", "HEADLINE", "MAX_THREADS", "SCALES", "STREAMS", "Config", "figures", "notes", "run"]

#: Update speed and memory are judged on process CPU time: the runner gives each unit one
#: thread, whatever --jobs is (spinning BLAS threads would count as CPU time).
MAX_THREADS = 1

STREAMS = ("growth", "rewire")
#: The incremental method judged on each kind of stream (records: arm "incremental").
_MAIN = {"growth": "digc", "rewire": "acnr"}

# Arms of the records. Accuracy streams (part = stream, instance = step): "incremental" (DIGC
# on growth, ACNR on rewiring), "digc", "acnr", "naive" (the previous coarsening reused, new
# nodes placed by the naive feature vote: the update's optimisation removed), "fgc" (FGC from
# scratch on the snapshot, same init and budget as the fit), "heavy_edge", "louvain",
# "random" (a random assignment with the same k), "full_graph". Scaling streams (part = stream
# name, instance = step): "incremental", "fgc" and "restart" (FGC restarted from scratch on the
# snapshot at the update's own iteration budget: the reuse of the previous coarsening removed).

_CREDITS_SPEED = ("abstract: the incremental updates reuse the previous coarsening and touch only "
                  "the nodes and edges that changed, hence 'substantial runtime and memory gains'")
_RESTART = ("the reuse of the previous coarsening: FGC restarted from scratch on the same snapshot "
            "(same heavy-edge start as the FGC arm) at the update's own iteration budget "
            "(ceil(update iterations / inner steps) rounds)")


def _worst_logratio(metric: str, arm: str, base: str, text: str) -> Custom:
    """Per part and seed: the worst (largest) log(arm / base) over the steps of the seed."""

    def fn(per_seed, sub):
        a, b = sub.get(arm, arm), sub.get(base, base)
        out: dict = {}
        for i, seed in enumerate(per_seed):
            va = {(r.part, r.instance): r.value for r in seed if r.metric == metric and r.arm == a}
            vb = {(r.part, r.instance): r.value for r in seed if r.metric == metric and r.arm == b}
            if not va:
                raise ValueError(f"No records for metric {metric!r}, arm {a!r}.")
            if set(va) != set(vb):
                raise ValueError(f"Arms {a!r} and {b!r} have different steps for {metric!r}.")
            for part in dict.fromkeys(p for p, _ in va):
                lst = out.setdefault(part, [None] * len(per_seed))
                lst[i] = float(max(np.log(va[k] / vb[k]) for k in va if k[0] == part))
        return {p: [v for v in vals if v is not None] for p, vals in out.items()}

    return Custom(fn, text, uses=(arm, base))


def _rewire_only(metric: str, arm: str, base: str) -> Custom:
    """arm - base on ``metric`` in the rewiring stream only, mean over its steps, per seed."""

    def fn(per_seed, sub):
        a, b = sub.get(arm, arm), sub.get(base, base)
        vals = []
        for seed in per_seed:
            va = {r.instance: r.value for r in seed if r.part == "rewire" and r.metric == metric and r.arm == a}
            vb = {r.instance: r.value for r in seed if r.part == "rewire" and r.metric == metric and r.arm == b}
            if not va or set(va) != set(vb):
                raise ValueError(f"Records of {a!r} and {b!r} on the rewiring stream do not pair.")
            vals.append(float(np.mean([va[k] - vb[k] for k in va])))
        return vals

    return Custom(fn, f"{metric}: {arm} - {base} on the rewiring stream, mean over steps, per seed",
                  uses=(arm, base))


CLAIMS = [
    # --- the headline: "substantial runtime and memory gains while maintaining accuracy" ---
    Claim("update_speed",
          "An incremental update (DIGC on growth, ACNR on deletions/rewiring) is at least 10x "
          "cheaper than FGC from scratch, on graphs large enough to show scaling.",
          "log(CPU time of the update / CPU time of FGC from scratch on the same snapshot), worst "
          "step of the seed; one part per scaling stream (>= 2,000 nodes)",
          direction="less", threshold=float(np.log(0.1)),
          source="abstract: 'substantial runtime ... gains' (10x: spec C update_speed)",
          evidence=_worst_logratio("cpu_time", "incremental", "fgc",
                                   "cpu_time: incremental vs fgc, worst step's log ratio, per seed"),
          control=Control({"incremental": "restart"}, removes=_RESTART, credits=_CREDITS_SPEED)),
    Claim("memory",
          "Incremental updates use less peak memory than FGC from scratch, on graphs large "
          "enough to show scaling.",
          "log(tracemalloc peak of the update / of FGC from scratch), worst step of the seed; one "
          "part per scaling stream (>= 2,000 nodes)",
          direction="less", threshold=0.0, source="abstract: 'substantial ... memory gains'",
          evidence=_worst_logratio("peak_mib", "incremental", "fgc",
                                   "peak_mib: incremental vs fgc, worst step's log ratio, per seed"),
          control=Control({"incremental": "restart"}, removes=_RESTART, credits=_CREDITS_SPEED)),
    Claim("accuracy_kept",
          "A 2-layer GCN trained on the incrementally coarsened graph is as accurate as one "
          "trained on FGC from scratch (within 2 points; hyperparameters on validation).",
          "test accuracy (points) incremental - FGC from scratch (same init and budget as the fit), "
          "mean over steps; parts: growth stream (DIGC), rewiring stream (ACNR)",
          direction="noninferior", threshold=0.0, margin=2.0,
          source="abstract: 'while maintaining accuracy' (2 points: spec C accuracy_kept)",
          evidence=Paired("test_acc", "incremental", "fgc"),
          control=Control({"incremental": "naive"},
                          removes="the update's optimisation of the new (and, for ACNR, refined) "
                                  "rows: survivors keep their supernode, new nodes join the supernode "
                                  "their features and neighbours vote for (naive rule), same events",
                          credits="abstract: DIGC and ACNR update the coarsening so that it stays "
                                  "epsilon-similar to the evolving graph 'while maintaining accuracy'")),
    # --- findings: ours or the spec's, not the abstract's ---
    Claim("acnr_on_rewiring",
          "On a stream with deletions and rewiring ACNR is at least as accurate as DIGC "
          "(within 1 point).",
          "test accuracy (points) ACNR - DIGC on the rewiring stream, mean over steps",
          direction="noninferior", threshold=0.0, margin=1.0, kind="finding",
          source="spec C acnr_on_rewiring", evidence=_rewire_only("test_acc", "acnr", "digc")),
    Claim("epsilon_vs_random",
          "The incremental coarsening is epsilon-similar to the graph with a smaller epsilon than "
          "a random assignment with the same k. A finding, not the paper's: a random assignment is "
          "a low bar that FGC and the naive rule clear as well.",
          "log(eps_incremental / eps_random) per step, mean over steps, eps = |‖X̃‖_Θc / ‖X‖_Θ - 1| "
          "(the exact smallest epsilon for the features); parts: growth (DIGC), rewiring (ACNR)",
          direction="less", threshold=0.0, kind="finding", source="review of issue 19",
          evidence=Paired("epsilon", "incremental", "random", transform="logratio")),
    Claim("epsilon_vs_naive",
          "The update's optimisation keeps the coarsening more epsilon-similar than reusing the "
          "previous coarsening with the naive rule for new nodes (our reading of 'epsilon-"
          "similarity controls the degradation').",
          "log(eps_incremental / eps_naive) per step, mean over steps; parts: growth (DIGC), "
          "rewiring (ACNR)",
          direction="less", threshold=0.0, kind="finding", source="our operationalisation (abstract: "
          "'epsilon-similarity controls the degradation')",
          evidence=Paired("epsilon", "incremental", "naive", transform="logratio")),
    Claim("anchor_near_full",
          "FGC from scratch (the accuracy anchor) is a good coarsening on the task: its GCN is within "
          "2 points of the GCN on the uncoarsened graph.",
          "test accuracy (points) FGC from scratch - full graph, mean over steps; parts: streams",
          direction="noninferior", threshold=0.0, margin=2.0, kind="finding",
          source="review 2026-12 (coarsening: the anchor must be good on the task)",
          evidence=Paired("test_acc", "fgc", "full_graph")),
    # --- checks of our implementation / set-up (not counted) ---
    Claim("anchor_beats_random",
          "The task tells coarsenings apart: FGC from scratch is more accurate than a random "
          "assignment with the same k.",
          "test accuracy (points) FGC from scratch - random assignment, mean over steps; parts: streams",
          direction="greater", threshold=0.0, kind="check", source="our set-up (review 2026-12)",
          evidence=Paired("test_acc", "fgc", "random")),
    Claim("epsilon_bounded",
          "The incremental update keeps our FGC's epsilon: at most 1.5x the from-scratch FGC's at "
          "every step (threshold INFERRED). A check, not evidence for the paper: a random "
          "assignment passes it too.",
          "log(max over steps of eps_incremental / eps_FGC); parts: growth (DIGC), rewiring (ACNR)",
          direction="less", threshold=float(np.log(1.5)), kind="check", source="spec C epsilon_bounded",
          evidence=_worst_logratio("epsilon", "incremental", "fgc",
                                   "epsilon: incremental vs fgc, worst step's log ratio, per seed")),
    Claim("certificate_valid",
          "The computable certificates bound the exact epsilon: eps <= eps_tight <= eps_bound "
          "after every update, for every method.",
          "eps <= eps_tight <= eps_bound (1e-9 slack) per (stream, method, step)",
          direction="all", kind="check", unit="instance", source="our implementation (an identity)",
          evidence=Universal("certificate_valid", "certificates")),
]

#: The claims that test the abstract's headline ("substantial runtime and memory gains while
#: maintaining accuracy"); the same ids as papers.py's headline_claims.
HEADLINE = ("update_speed", "memory", "accuracy_kept")


@dataclass(frozen=True)
class Config:
    # accuracy streams (contextual SBM)
    p0: int
    n_add: int
    steps: int
    ratio: float = 0.25
    n_classes: int = 5
    d: int = 32
    p_in: float = 0.05
    p_out: float = 0.005
    mu_scale: float = 0.6
    del_frac: float = 0.03
    rewire_frac: float = 0.02
    fgc_outer: int = 10
    fgc_inner: int = 5
    gcn_epochs: int = 100
    # scaling streams: (name, source "facebook" | "sbm", p0, nodes added per step, steps, rule
    # [, k]); k defaults to scale_ratio * p0
    scale: tuple = (("facebook-growth", "facebook", 2000, 200, 2, "digc"),)
    scale_ratio: float = 0.1
    scale_degree: float = 10.0     # mean degree of the "sbm" scaling source
    # FGC's budget on the scaling streams (fit and from scratch), at every scale: 20 x 20 at
    # 10^5 nodes would cost about 30 CPU-minutes a call; a smaller budget only makes the
    # from-scratch arm cheaper, so the speed claim harder to reproduce
    scale_fgc: tuple = (10, 5)
    weights: tuple = (("omega", 0.01), ("zeta", 1.0), ("alpha", 0.01), ("beta", 0.1))
    seeds: int = 5


SCALES = {
    "smoke": Config(p0=200, n_add=50, steps=1, gcn_epochs=30, fgc_outer=3, fgc_inner=3,
                    scale=(("facebook-growth", "facebook", 300, 50, 1, "digc"),
                           ("facebook-rewire", "facebook", 300, 50, 1, "acnr")), scale_fgc=(3, 3),
                    seeds=2),
    "quick": Config(p0=400, n_add=50, steps=2, seeds=6,
                    scale=(("facebook-growth", "facebook", 2000, 200, 2, "digc"),
                           ("facebook-rewire", "facebook", 2000, 200, 1, "acnr"))),
    # full keeps quick's expected degrees (p_in, p_out scaled by 400 / 2000): at quick's
    # probabilities a 2,000-node CSBM has mean degree 28 and a pilot seed had every method,
    # the full-graph GCN included, at 100 % test accuracy on both streams
    "full": Config(p0=2000, n_add=250, steps=6, fgc_outer=20, fgc_inner=20, gcn_epochs=200,
                   p_in=0.01, p_out=0.001,
                   scale=(("facebook-growth", "facebook", 3000, 300, 3, "digc"),
                          ("facebook-rewire", "facebook", 3000, 300, 2, "acnr"),
                          ("sbm100k-growth", "sbm", 100_000, 1000, 1, "digc", 200),
                          ("sbm100k-rewire", "sbm", 100_000, 1000, 1, "acnr", 200)),
                   seeds=10),
}


def _peak_mb(fn) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def _measure(fn, mem_fn=None):
    """(output, CPU seconds, peak MiB). Time is taken without tracemalloc (its per-allocation
    overhead would penalise code with many small arrays); the peak comes from a second run of
    ``mem_fn`` (default ``fn``) under tracemalloc."""
    t0 = time.process_time()
    out = fn()
    dt = time.process_time() - t0
    return out, dt, _peak_mb(mem_fn or fn)


def _scratch(cfg, A, X, k, seed):
    """FGC from scratch on a snapshot: the same start (heavy-edge, fgc's default) and budget
    (fgc_outer x fgc_inner) as the fit the incremental methods start from."""
    res = fgc(A, X, k, n_outer=cfg.fgc_outer, n_inner=cfg.fgc_inner, seed=seed)
    return res.x, coarse_features(res.x, X)


def _random_labels(p: int, k: int, rng) -> np.ndarray:
    lab = np.concatenate([np.arange(k), rng.integers(0, k, p - k)])
    rng.shuffle(lab)
    return lab


def _onehot_eps(A, X, lab) -> dict:
    C = np.eye(int(lab.max()) + 1)[lab]
    return epsilon_certificate(A, X, C, coarse_features(C, X))


def _accuracy_streams(cfg: Config, seed: int, progress) -> list[Record]:
    P = cfg.p0 + cfg.steps * cfg.n_add
    A_all, X_all, y_all, split_all = csbm(P, n_classes=cfg.n_classes, d=cfg.d, p_in=cfg.p_in,
                                          p_out=cfg.p_out, mu_scale=cfg.mu_scale, seed=seed)
    w = dict(cfg.weights)
    k0 = max(2, int(round(cfg.ratio * cfg.p0)))
    base = DynamicCoarsener(k=k0, update="acnr", weights=w, certificate=False,
                            fgc_options=dict(n_outer=cfg.fgc_outer, n_inner=cfg.fgc_inner), seed=seed)
    base.fit(A_all[:cfg.p0, :cfg.p0], X_all[:cfg.p0])
    progress.advance()
    gseed = derive_seed(seed, "gcn")
    q_same = cfg.p_in / (cfg.p_in + (cfg.n_classes - 1) * cfg.p_out)
    out: list[Record] = []
    for stream in STREAMS:
        rng = np_rng(seed, "events", stream)
        rrng = np_rng(seed, "random-assignment", stream)
        coars = {"acnr": copy.deepcopy(base), "digc": copy.deepcopy(base)}
        coars["digc"].update_rule = "digc"
        naive = hard_assignment(base.state.C)
        for t in range(1, cfg.steps + 1):
            inst = f"step{t}"
            ref = coars["digc"]
            ids = ref.state.node_ids
            lo, hi = cfg.p0 + (t - 1) * cfg.n_add, cfg.p0 + t * cfg.n_add
            ev = growth_events(A_all, X_all, ids, lo, hi)
            if stream == "rewire":
                ev = rewire_events(ev, ref.adjacency, ids, rng, del_frac=cfg.del_frac,
                                   rewire_frac=cfg.rewire_frac, same=(y_all, q_same))
            row: dict = {}
            for name, dc in coars.items():
                dc.update(ev)
                st = dc.state
                row[name] = dict(assign=st.assignment, reassigned=st.n_reassigned,
                                 **epsilon_certificate(dc.adjacency, dc.features, st.C, st.coarse_features))
            ref = coars["acnr"]
            A_t, X_t, ids_t = ref.adjacency, ref.features, ref.state.node_ids
            k_t = ref.state.k
            # naive rule: survivors keep their supernode, new nodes vote (the control of
            # accuracy_kept: the previous coarsening reused, the update's optimisation removed)
            surv_mask = np.isin(ids, ids_t)
            s = int(surv_mask.sum())
            _, a_s = np.unique(naive[surv_mask], return_inverse=True)
            Xc = np.zeros((a_s.max() + 1, X_t.shape[1]))
            np.add.at(Xc, a_s, X_t[:s])
            Xc /= np.maximum(np.bincount(a_s), 1)[:, None]
            naive = np.r_[a_s, naive_incremental(A_t, a_s, Xc, X_t[s:])]
            row["naive"] = dict(assign=naive, **_onehot_eps(A_t, X_t, naive))
            Cf, Xcf = _scratch(cfg, A_t, X_t, k_t, seed)
            row["fgc"] = dict(assign=hard_assignment(Cf), **epsilon_certificate(A_t, X_t, Cf, Xcf))
            row["heavy_edge"] = dict(assign=heavy_edge_coarsen(A_t, k_t))
            row["louvain"] = dict(assign=louvain_coarsen(A_t, seed=seed))
            lab = _random_labels(A_t.shape[0], k_t, rrng)
            row["random"] = dict(assign=lab, **_onehot_eps(A_t, X_t, lab))
            row["full_graph"] = dict(assign=None)
            row["incremental"] = row[_MAIN[stream]]
            # DIGC's and ACNR's graphs are the same here: the events are applied identically
            yt, sp_t = y_all[ids_t], split_all[ids_t]
            acc: dict = {}
            for name, r in row.items():
                if name == "incremental":
                    continue
                acc[name] = coarse_gcn_eval(A_t, X_t, yt, r["assign"], sp_t, n_classes=cfg.n_classes,
                                            epochs=cfg.gcn_epochs, seed=gseed)
            acc["incremental"] = acc[_MAIN[stream]]
            for name, r in row.items():
                val, test = acc[name]
                out += [Record(stream, name, inst, "test_acc", test), Record(stream, name, inst, "val_acc", val)]
                if "epsilon" in r:
                    out.append(Record(stream, name, inst, "epsilon", max(float(r["epsilon"]), 1e-12)))
                if "reassigned" in r:
                    out.append(Record(stream, name, inst, "reassigned", r["reassigned"]))
                if "epsilon_bound" in r and name != "incremental":
                    ok = (r["epsilon"] <= r["epsilon_tight"] + 1e-9) and (r["epsilon_tight"] <= r["epsilon_bound"] + 1e-9)
                    out.append(Record("", "certificates", f"{stream}/{name}/{inst}", "certificate_valid", float(ok)))
                if name == "incremental":
                    out.append(Record(stream, name, inst, "nodes", ids_t.size))
                    out.append(Record(stream, name, inst, "k", k_t))
            progress.advance()
    return out


def _scale_start(cfg: Config, spec: tuple, seed: int, cache: dict):
    """The stream's graph and its coarsening fitted at p0; streams that share a source, size and
    k share the fit (a copy each)."""
    name, source, p0, add, steps, rule, *k = spec
    n_total = p0 + steps * add
    k = k[0] if k else max(2, int(round(cfg.scale_ratio * p0)))
    key = (source, p0, n_total, k)
    if key not in cache:
        if source == "facebook":
            A_all, X_all, src = facebook(n_total, seed)
        else:
            A_all, X_all = sparse_sbm(n_total, degree=cfg.scale_degree, n_classes=10, d=32,
                                      same=0.8, seed=seed)
            src = f"sparse SBM, mean degree {cfg.scale_degree:g}"
        n_o, n_i = cfg.scale_fgc
        dc = DynamicCoarsener(k=k, weights=dict(cfg.weights), certificate=False,
                              fgc_options=dict(n_outer=n_o, n_inner=n_i), seed=seed)
        dc.fit(A_all[:p0, :p0], X_all[:p0])
        cache[key] = (A_all, X_all, src, dc)
    A_all, X_all, src, dc = cache[key]
    dc = copy.deepcopy(dc)
    dc.update_rule = rule
    return A_all, X_all, src, dc, k


def _scale_stream(cfg: Config, spec: tuple, seed: int, progress, cache: dict) -> list[Record]:
    """Records of one scaling stream: per step, CPU time and tracemalloc peak of the update
    ("incremental"), of FGC from scratch ("fgc", its fixed scale_fgc budget) and of FGC
    restarted from scratch at the update's own iteration budget ("restart": the control)."""
    name, source, p0, add, steps, rule = spec[:6]
    A_all, X_all, src, dc, k = _scale_start(cfg, spec, seed, cache)
    n_o, n_i = cfg.scale_fgc
    rng = np_rng(seed, "scale-events", name)
    out: list[Record] = []
    for t in range(1, steps + 1):
        inst = f"step{t}"
        ids = dc.state.node_ids
        ev = growth_events(A_all, X_all, ids, p0 + (t - 1) * add, p0 + t * add)
        if rule == "acnr":
            ev = rewire_events(ev, dc.adjacency, ids, rng, del_frac=cfg.del_frac, rewire_frac=cfg.rewire_frac)
        # every solver iteration allocates the same arrays, so a twin capped at two iterations
        # has the update's peak (measured equal within 0.2 % on the quick facebook step)
        twin = copy.deepcopy(dc)
        twin.max_iter = 2

        def short(twin=twin, ev=ev):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # it stops at max_iter
                twin.update(ev)

        _, dt, mem = _measure(lambda dc=dc, ev=ev: dc.update(ev), short)
        A_t, X_t, k_t = dc.adjacency, dc.features, dc.state.k
        nit = int(dc.state.result.nit)
        # FGC allocates the same arrays every iteration: its peak comes from a 1 x 1 run
        _, dtf, memf = _measure(
            lambda A_t=A_t, X_t=X_t, k_t=k_t: fgc(A_t, X_t, k_t, n_outer=n_o, n_inner=n_i, seed=seed),
            lambda A_t=A_t, X_t=X_t, k_t=k_t: fgc(A_t, X_t, k_t, n_outer=1, n_inner=1, seed=seed))
        # the control: the same snapshot coarsened from scratch (no reuse) at the update's budget
        r_o = max(1, -(-nit // n_i))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, dtr, memr = _measure(
                lambda A_t=A_t, X_t=X_t, k_t=k_t, r_o=r_o: fgc(A_t, X_t, k_t, n_outer=r_o, n_inner=n_i, seed=seed),
                lambda A_t=A_t, X_t=X_t, k_t=k_t: fgc(A_t, X_t, k_t, n_outer=1, n_inner=1, seed=seed))
        for arm, tm, mm in (("incremental", dt, mem), ("fgc", dtf, memf), ("restart", dtr, memr)):
            out += [Record(name, arm, inst, "cpu_time", max(tm, 1e-6)), Record(name, arm, inst, "peak_mib", mm)]
        p_t = int(dc.state.node_ids.size)
        out += [Record(name, "incremental", inst, "iterations", nit),
                Record(name, "fgc", inst, "iterations", n_o * n_i),
                Record(name, "restart", inst, "iterations", r_o * n_i),
                Record(name, "incremental", inst, "nodes", p_t),
                Record(name, "incremental", inst, "survivors", p_t - len(ev.add_nodes)),
                Record(name, "incremental", inst, "k", k_t)]
        if rule == "acnr":
            out.append(Record(name, "incremental", inst, "refined", int(dc.state.result.extra["refine"].size)))
        progress.advance()
    return out


def run(config: Config, seed: int, progress) -> list[Record]:
    progress.start(1 + 2 * config.steps + sum(s[4] for s in config.scale), "coarsening streams")
    out = _accuracy_streams(config, seed, progress)
    cache: dict = {}
    for spec in config.scale:
        out += _scale_stream(config, spec, seed, progress, cache)
    return out


def _mean_metric(per_seed, metric: str, arm: str, part: str) -> float:
    vals = [r.value for seed in per_seed for r in seed if r.metric == metric and r.arm == arm and r.part == part]
    return float(np.mean(vals)) if vals else float("nan")


def notes(per_seed) -> dict[str, str]:
    """What the speed claims' parts are (rule, nodes, ACNR's refined share, the update's
    iterations that set the control's budget), and the accuracy arms' means."""
    per_seed = [as_records(s) for s in per_seed]
    parts = list(dict.fromkeys(r.part for r in per_seed[0] if r.metric == "cpu_time"))
    bits = []
    for part in parts:
        p = _mean_metric(per_seed, "nodes", "incremental", part)
        it = _mean_metric(per_seed, "iterations", "incremental", part)
        b = f"{part}: {p:.0f} nodes, update {it:.0f} iterations"
        ref = [r.value for s in per_seed for r in s if r.part == part and r.metric == "refined"]
        if ref:
            surv = [r.value for s in per_seed for r in s if r.part == part and r.metric == "survivors"]
            b += f", ACNR refined {100 * np.mean(ref) / max(np.mean(surv), 1):.0f} % of the survivors"
        bits.append(b)
    speed = "threshold log(0.1) = -2.30; " + "; ".join(bits)
    accs = []
    for st in STREAMS:
        m = {a: _mean_metric(per_seed, "test_acc", a, st) for a in
             ("incremental", "naive", "fgc", "heavy_edge", "louvain", "random", "full_graph")}
        accs.append(f"{st}: " + ", ".join(f"{a} {v:.1f}" for a, v in m.items()))
    return {"update_speed": speed, "accuracy_kept": "mean test accuracy (%) " + "; ".join(accs)}


def figures(per_seed, outdir: Path) -> list[Path]:
    per_seed = [as_records(s) for s in per_seed]
    outdir = Path(outdir)
    paths = []
    methods = ("acnr", "digc", "naive", "fgc", "heavy_edge", "louvain", "full_graph", "random")
    for metric, ylabel in (("test_acc", "test accuracy (%)"), ("epsilon", "exact epsilon")):
        fig, axes = new_figure(1, 2, figsize=(9, 3.4))
        for ax, s in zip(axes, STREAMS, strict=True):
            for m in methods:
                vals = {}
                for seed in per_seed:
                    for r in seed:
                        if r.part == s and r.arm == m and r.metric == metric:
                            vals.setdefault(int(r.instance[4:]), []).append(r.value)
                if not vals:
                    continue
                steps = sorted(vals)
                ax.plot(steps, [np.mean(vals[t]) for t in steps], "o-", label=m)
            ax.set_title(f"{s} stream")
            ax.set_xlabel("step")
            ax.set_ylabel(ylabel)
        axes[0].legend(fontsize=7)
        paths.append(save_figure(fig, outdir / f"{metric}.png", dpi=80))
    names = list(dict.fromkeys(r.part for r in per_seed[0] if r.metric == "cpu_time"))
    fig, axes = new_figure(1, 2, figsize=(9, 3.4))
    x = np.arange(len(names))
    arms = (("incremental", "incremental (DIGC / ACNR)"), ("restart", "restart (control)"),
            ("fgc", "FGC from scratch"))
    for ax, key, ylabel in ((axes[0], "cpu_time", "CPU seconds per update"),
                            (axes[1], "peak_mib", "peak MiB (tracemalloc)")):
        for j, (arm, label) in enumerate(arms):
            ax.bar(x + (j - 1) * 0.27, [_mean_metric(per_seed, key, arm, s) for s in names], 0.27, label=label)
        ax.set_xticks(x)
        ax.set_xticklabels([f"{s}\n{_mean_metric(per_seed, 'nodes', 'incremental', s):.0f} nodes"
                            for s in names], fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
    # above the axes: inside, it covered the tallest bars
    axes[0].legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.02), ncol=3, frameon=False)
    paths.append(save_figure(fig, outdir / "scaling.png", dpi=80))
    return paths
