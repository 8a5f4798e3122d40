"""Bad inputs raise at once, naming the argument, the rule and the value."""

import pytest
import torch

from optzoo.copro import CoProConfig, CoProLoss, copro_e_step, copro_loss
from optzoo.copro.opamp import opamp_evaluate

F = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(0))
g = torch.randn(2, 4, 1, generator=torch.Generator().manual_seed(1))

CASES = [
    (lambda: copro_e_step(F[0], g), ValueError, r"'objectives' argument of copro_e_step must be a tensor of shape \[B, G, m\]"),
    (lambda: copro_e_step(F, g[:, :3]), ValueError, r"'constraints' argument .* \[B, G, k\]"),
    (lambda: copro_e_step(F[:, :1], g[:, :1]), ValueError, r"group size G >= 2"),
    (lambda: copro_e_step(F, g, senses=("max", "min")), ValueError, r"'senses' .* length m = 3"),
    (lambda: copro_e_step(F, g, senses=("max", "up", "min")), ValueError, r"'senses' .* 'max' or 'min'"),
    (lambda: copro_e_step(F, g, senses="max"), TypeError, r"'senses'"),
    (lambda: copro_e_step(F.clone().index_fill_(0, torch.tensor([0]), float("nan")), g),
     ValueError, r"'objectives' .* finite .*on_nan='infeasible'"),
    (lambda: copro_e_step(F, g, tau_feas=1.0), ValueError, r"'tau_feas' .* \(0, 1\). Got 1.0"),
    (lambda: copro_e_step(F, g, tau_feas=0.0), ValueError, r"'tau_feas'"),
    (lambda: copro_e_step(F, g, eps_progress=-0.1), ValueError, r"'eps_progress' .* \[0, inf\]. Got -0.1"),
    (lambda: copro_e_step(F, g, eta_tie=-1.0), ValueError, r"'eta_tie'"),
    (lambda: copro_e_step(F, g, tie_tol=-0.02), ValueError, r"'tie_tol'"),
    (lambda: copro_e_step(F, g, violation_tol=-1.0), ValueError, r"'violation_tol'"),
    (lambda: copro_e_step(F, g, on_nan="skip"), ValueError, r"'on_nan' .* 'raise', 'infeasible'"),
    (lambda: copro_e_step(F, g, constraint_scale=[0.0]), ValueError, r"'constraint_scale'"),
    (lambda: copro_e_step("abc", g), TypeError, r"'objectives'"),
    (lambda: copro_loss(torch.zeros(2, 3), torch.zeros(2, 3), q=torch.ones(2, 3), trust_region="clip"),
     ValueError, r"'trust_region' argument of copro_loss must be one of 'kl_penalty', 'kl_constraint'"),
    (lambda: copro_loss(torch.zeros(2, 3), torch.zeros(2, 4), q=torch.ones(2, 3)), ValueError, r"'logp_old'"),
    (lambda: copro_loss(torch.zeros(2, 3), torch.zeros(2, 3), q=-torch.ones(2, 3)), ValueError, r"'q' .* nonnegative"),
    (lambda: copro_loss(torch.zeros(2, 3), torch.zeros(2, 3), q=torch.ones(2, 3), coef=-1.0), ValueError, r"'coef'"),
    (lambda: CoProLoss(kl_bound=0.0), ValueError, r"'kl_bound' argument of CoProLoss"),
    (lambda: CoProConfig(num_generations=1), ValueError, r"'num_generations' argument of CoProConfig .* \[2, inf\]"),
    (lambda: CoProConfig(trust_region="x"), ValueError, r"'trust_region'"),
    (lambda: opamp_evaluate([[1.0] * 6]), ValueError, r"'x' argument of opamp_evaluate must be an array of shape \(n, 7\)"),
    (lambda: opamp_evaluate([[1.0] * 7], spec=[1.0, 2.0]), ValueError, r"'spec'"),
]


@pytest.mark.parametrize("call,exc,match", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
