"""The smoke reproduction runs and gives well-formed verdicts and figures."""

from optzoo.comparison import repro
from optzoo.repro.claim import VERDICTS, NullProgress


def test_smoke_reproduction(tmp_path):
    cfg = repro.SCALES["smoke"]
    per_seed = [repro.run(cfg, s, NullProgress()) for s in range(cfg.seeds)]
    verdicts = repro.judge(per_seed)
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert all(v.verdict in VERDICTS for v in verdicts)
    kinds = {c.id: c.kind for c in repro.CLAIMS}
    assert kinds["quantum_ledger_linear"] == "check" and kinds["statevector_born"] == "check"
    assert all("simulated" in c.statement.lower() for c in repro.CLAIMS if "quantum" in c.id or "statevector" in c.id)
    paths = repro.figures(per_seed, tmp_path)
    assert paths and all(p.exists() for p in paths)
    assert repro.SCALES["quick"].seeds >= 5
