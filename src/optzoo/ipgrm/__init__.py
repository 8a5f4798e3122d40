"""IP-GRM: independent-principle generative reward models with a principle cache (paper 02).

Ren et al., "Unbiased Principles, Robust Rewards", ICML 2026, arXiv 2602.10019. The judge is
factorised as P(P, J | Q, R) = P(P | Q) * P(J | Q, P, R): principles come from the question
alone (Stage 1), the judgment from (Q, P, R) (Stage 2), so I(P; R | Q) = 0; the coupled
baseline writes P after seeing R. The Principle Cache makes Stage 1 run once per distinct
question per GRPO step and shares the rubric across the group. Fidelity: official-code
(formats, cache semantics); prompt wording, simulated judge and experiments are ours.
Heavy libraries (torch, transformers) are imported only inside the functions that use them.
"""

from optzoo.ipgrm.judges import HFJudge, Judge, JudgeError, OpenAICompatJudge
from optzoo.ipgrm.reward import (
    CoupledGRMReward,
    IPGRMReward,
    PrincipleCache,
    grpo_advantages,
    measure_drift,
)
from optzoo.ipgrm.simulated import SimulatedJudge, gold_quality, make_question
from optzoo.ipgrm.text import (
    Criterion,
    ParseStats,
    parse_principles,
    parse_score,
    render_coupled,
    render_judge,
    render_principles,
    strip_think,
    truncate_middle,
)

__all__ = [
    "CoupledGRMReward",
    "Criterion",
    "HFJudge",
    "IPGRMReward",
    "Judge",
    "JudgeError",
    "OpenAICompatJudge",
    "ParseStats",
    "PrincipleCache",
    "SimulatedJudge",
    "gold_quality",
    "grpo_advantages",
    "make_question",
    "measure_drift",
    "parse_principles",
    "parse_score",
    "render_coupled",
    "render_judge",
    "render_principles",
    "strip_think",
    "truncate_middle",
]
