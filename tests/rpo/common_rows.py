"""rpo's rows in the common table (tests/test_common.py): RPO.train and SHAC.train on a tiny
LQR, returning optzoo.Result."""


def rows(Bad, SolverInfo, OptimInfo):
    from optzoo.rpo import LQR, RPO, SHAC, RPOConfig, shac_config

    tiny = {"horizon": 4, "hidden": (4,), "critic_hidden": (4,), "critic_iterations": 1}

    def runner(cls, make_cfg):
        def run(seed=0, **kw):
            return cls(LQR(4, episode_length=8), make_cfg(**{**tiny, **kw})).train(48, seed=seed)
        return run

    solvers = []
    for name, cls, make in (("rpo_RPO.train", RPO, RPOConfig), ("rpo_SHAC.train", SHAC, shac_config)):
        bad = [Bad("rpo-c_low=0", lambda make=make: make(c_low=0.0), ValueError,
                   r"'c_low' argument of RPOConfig must be"),
               Bad("rpo-gamma=0", lambda make=make: make(gamma=0.0), ValueError,
                   r"'gamma' argument of RPOConfig must be"),
               Bad("rpo-horizon=0", lambda make=make: make(horizon=0), ValueError,
                   r"'horizon' argument of RPOConfig must be an int"),
               Bad("rpo-steps=0", lambda cls=cls: cls(LQR(2)).train(0), ValueError,
                   rf"'total_env_steps' argument of {cls.__name__}.train")]
        solvers.append(SolverInfo(name, runner(cls, make), bad=bad, seed_kw="seed", stochastic=True,
                                  diverge={"actor_lr": 1e12, "lr_schedule": "constant"}))
    return [], solvers
