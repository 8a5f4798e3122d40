"""salaad's rows in the common table: the robust-PCA solver (SALAAD itself is a wrapper used
beside any torch optimizer, not an optimizer; its own tests cover its state round trip)."""

import numpy as np


def _problem():
    g = np.random.default_rng(0)
    L = g.standard_normal((20, 2)) @ g.standard_normal((2, 20))
    S = np.where(g.random((20, 20)) < 0.05, 3.0, 0.0)
    return L + S


def rows(Bad, SolverInfo, OptimInfo):
    from optzoo.salaad import rpca_ialm

    def run(**kw):
        return rpca_ialm(_problem(), **kw)

    bad = [
        Bad("salaad-rpca lam<=0", lambda: rpca_ialm(_problem(), lam=0.0), ValueError,
            r"'lam' argument of rpca_ialm must be a finite real number in \(0, inf\)\. Got 0\.0"),
        Bad("salaad-rpca max_iter=0", lambda: rpca_ialm(_problem(), max_iter=0), ValueError,
            r"'max_iter' argument of rpca_ialm must be an int in \[1, inf\]\. Got 0"),
        Bad("salaad-rpca M 1-D", lambda: rpca_ialm(np.ones(3)), ValueError,
            r"'M' argument of rpca_ialm must be an array with 2 dimensions"),
        Bad("salaad-rpca M str", lambda: rpca_ialm("M"), TypeError, r"'M' argument of rpca_ialm"),
    ]
    nonfinite = Bad("salaad-rpca nan", lambda: rpca_ialm(np.full((3, 3), np.nan)), ValueError,
                    r"'M' argument of rpca_ialm must contain only finite values")
    return [], [SolverInfo("salaad-rpca_ialm", run, bad=bad, seed_kw=None, nonfinite=nonfinite)]
