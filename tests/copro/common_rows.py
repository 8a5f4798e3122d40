"""copro's rows in the common table: none.

copro ships no torch.optim optimizer and no solver returning optzoo.Result: its E-step returns
a CoProEStep record (per-group statuses), its M-step is a loss and its trainer a TRL-style loop.
Their bad inputs, determinism and NaN handling are tested in tests/copro/.
"""


def rows(Bad, SolverInfo, OptimInfo):
    return [], []
