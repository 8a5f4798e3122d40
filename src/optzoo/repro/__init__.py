"""The reproduction harness: claims, verdicts, the unit runner and the report."""

from optzoo.repro.claim import Claim, NullProgress, PaperRun, Progress, Verdict

__all__ = ["Claim", "NullProgress", "PaperRun", "Progress", "Verdict"]
