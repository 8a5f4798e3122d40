"""The smoke reproduction runs on records, every claim is judged with its control, and the
headline's control (CMP-TR without its Hessian) gives a different verdict than the claim."""

import math

from optzoo.comparison import repro
from optzoo.repro.claim import VERDICTS, NullProgress
from optzoo.repro.evidence import Record
from optzoo.repro.judging import check_claims, judge_claims

HEADLINE = ("visits_within_budget", "eps_exponent_valley")


def test_smoke_reproduction(tmp_path):
    check_claims(repro.CLAIMS)
    cfg = repro.SCALES["smoke"]
    per_seed = [repro.run(cfg, s, NullProgress()) for s in range(cfg.seeds)]
    assert all(isinstance(r, Record) for seed in per_seed for r in seed)
    verdicts = judge_claims(repro.CLAIMS, per_seed, scale="smoke", notes=repro.notes(per_seed))
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert all(v.verdict in VERDICTS for v in verdicts)
    by = {v.claim: v for v in verdicts}
    for c in repro.CLAIMS:
        if c.kind == "claim":
            assert c.source.startswith("abstract")
            assert by[c.id].control is not None, c.id
            assert "could not be read" not in by[c.id].summary
    assert set(HEADLINE) <= {c.id for c in repro.CLAIMS if c.kind == "claim"}
    head = by["visits_within_budget"]
    assert head.verdict == "reproduced" and head.status == "reproduced"
    assert head.control.verdict == "not reproduced"        # the control fails where the claim holds
    kinds = {c.id: c.kind for c in repro.CLAIMS}
    for cid in ("eps_slope_tr", "n_slope_tr", "quantum_ledger_linear", "statevector_born"):
        assert kinds[cid] == "check"
    for cid in ("eps_slope_ngd", "crossover_small", "crossover_large", "ratio_scaling", "cma_vs_tr_benign"):
        assert kinds[cid] == "finding"
    assert all("simulated" in c.statement.lower() for c in repro.CLAIMS if "quantum" in c.id or "statevector" in c.id)
    # the control ran on the same instances in the same units
    inst = {arm: {(r.part, r.instance) for s in per_seed for r in s if r.metric == "visited_within_budget"
                  and r.arm == arm} for arm in (repro.TR, repro.NO_H)}
    assert inst[repro.TR] == inst[repro.NO_H]
    paths = repro.figures(per_seed, tmp_path)
    assert paths and all(p.exists() for p in paths)
    assert repro.SCALES["quick"].seeds >= 5


def test_planned_budget_is_the_methods_own_plan():
    from optzoo.comparison import gradient_cost, hessian_cost, iteration_budget
    from optzoo.comparison.repro.problems import valley

    p = valley(4, 0.1, seed=0)
    T = iteration_budget("tr", eps=0.1, L=p.L, rho=p.rho, delta_f=p.delta_f)
    assert T == math.ceil(12 * p.delta_f / 0.1 ** 1.5)
    assert repro.planned_budget(p, 0.1) == T * (gradient_cost(4, 0.125) + hessian_cost(4, 0.125) + 4)
