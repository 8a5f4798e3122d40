"""Bad inputs raise at once, naming the argument, the rule and the value."""

import pytest
import torch

from optzoo.salaad import SALAAD, HiddenMarkovTask, SALAADConfig, rpca_ialm


def _model():
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))


@pytest.mark.parametrize("field,value", [("rank_ratio", 0.0), ("rank_ratio", 1.5), ("density", 0.0),
                                         ("density", -0.1), ("rho", 0.0), ("admm_every", 0)])
def test_targets_outside_range(field, value):
    with pytest.raises(ValueError, match=rf"'{field}' argument of SALAADConfig must be .*Got {value}"):
        SALAADConfig(**{field: value})


def test_module_with_no_matrix_to_target():
    with pytest.raises(ValueError, match=r"'targets' argument of SALAAD must be a pattern matching at least "
                                         r"one nn.Linear.*candidates: 0, 2.*Got '\(q\|k"):
        SALAAD(_model())
    with pytest.raises(TypeError, match=r"'model' argument of SALAAD must be a torch.nn.Module"):
        SALAAD("model")
    with pytest.raises(TypeError, match="unexpected keyword argument 'rank'"):
        SALAAD(_model(), targets=r"\d", rank=3)


def test_budget_below_minimum_names_the_minimum():
    m = _model()
    sal = SALAAD(m, targets=r"^0$", rho=0.1, admm_every=1)
    rest = sal.rest_params
    assert rest == 6 + 6 * 3 + 3
    sal.penalty()
    assert sal.step()  # one sweep: an export before it is refused (test below)
    with pytest.raises(ValueError, match=rf"'budget' argument of SALAAD.export must be at least the "
                                         rf"smallest exportable count {rest} .*Got {rest - 1}\."):
        sal.export(rest - 1)
    assert sal.export(rest).params == rest


def test_nan_weights():
    m = _model()
    with torch.no_grad():
        m[0].weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"'model' argument of SALAAD must be a model with finite weights.*0.weight"):
        SALAAD(m, targets=r"^0$")
    m = _model()
    sal = SALAAD(m, targets=r"^0$", rho=0.1, admm_every=1)
    sal.penalty()
    with torch.no_grad():
        m[0].weight[1, 1] = float("inf")
    with pytest.raises(FloatingPointError, match="block '0' has NaN/inf"):
        sal.step()


def test_step_without_penalty_in_coupled_mode():
    sal = SALAAD(_model(), targets=r"^0$", rho=0.1)
    with pytest.raises(RuntimeError, match=r"penalty\(\) was not used"):
        sal.step()
    sal2 = SALAAD(_model(), targets=r"^0$", rho=0.1, mode="decoupled")
    with pytest.raises(ValueError, match=r"'lr' argument of SALAAD.step must be a real number > 0"):
        sal2.step()


def test_tied_weights_warn_and_count_once():
    m = torch.nn.ModuleDict({"embed_tokens": torch.nn.Embedding(7, 4), "lm_head": torch.nn.Linear(4, 7, bias=False)})
    m["lm_head"].weight = m["embed_tokens"].weight
    with pytest.warns(UserWarning, match="tied"):
        sal = SALAAD(m, rho=0.1)
    assert list(sal.weights) == ["embed_tokens"] and sal.rest_params == 0


def test_other_bad_inputs():
    with pytest.raises(ValueError, match=r"'mode' argument of SALAADConfig must be one of 'coupled', 'decoupled'"):
        SALAADConfig(mode="joint")
    with pytest.raises(ValueError, match=r"'M' argument of rpca_ialm must contain only finite|'M' argument of rpca_ialm"):
        rpca_ialm([[1.0, float("nan")], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"'support' argument of HiddenMarkovTask must be an int in \[1, 8\]"):
        HiddenMarkovTask(n_states=4, vocab=8, support=9)


def test_export_before_the_first_sweep_is_refused():
    """December trial D3: export() before any sweep returned a model whose targeted weights were
    all zero, at any budget, without a word."""
    sal = SALAAD(_model(), targets=r"^0$", rho=0.1)
    with pytest.raises(RuntimeError, match=r"SALAAD.export: no sweep has run yet"):
        sal.export(10 ** 9)


def test_load_state_dict_checks_block_shapes():
    """December trial D4: a state with the same block names but other shapes was accepted."""
    small = SALAAD(torch.nn.Sequential(torch.nn.Linear(8, 8)), targets=r"^0$")
    big = SALAAD(torch.nn.Sequential(torch.nn.Linear(16, 16)), targets=r"^0$")
    with pytest.raises(ValueError, match=r"'state' argument of SALAAD.load_state_dict must be blocks "
                                         r"of this model's shapes \(block '0': \(8, 8\)\)\. Got "
                                         r"\"L of block '0' with shape \(16, 16\)\""):
        small.load_state_dict(big.state_dict())


def test_budget_curve_evaluator_must_return_a_number():
    """December trial D15: an evaluator returning a str gave a raw float conversion error."""
    sal = SALAAD(_model(), targets=r"^0$", rho=0.1, admm_every=1)
    sal.penalty()
    sal.step()
    with pytest.raises(TypeError, match=r"'evaluate' argument of SALAAD.budget_curve must be a "
                                        r"callable returning a real number per model"):
        sal.budget_curve(lambda model: "good", fractions=(1.0,))
    # trial 2, item 6: NaN was accepted as a value
    with pytest.raises(ValueError, match=r"'evaluate' argument of SALAAD.budget_curve must be a "
                                         r"callable returning a real number per model, not NaN"):
        sal.budget_curve(lambda model: float("nan"), fractions=(1.0,))
