"""The private TRL hooks RCDPOTrainer overrides, against the installed TRL (issue 17, item 7).

TRL may change private methods in any release. These tests fail loudly, naming the hook, when
the installed TRL no longer has what the adapter relies on, and check that pyproject.toml pins
TRL to the range the adapter is tested on.
"""

import inspect
import tomllib
from pathlib import Path

import pytest

trl = pytest.importorskip("trl")

from optzoo.reward_calibration import trl_adapter  # noqa: E402

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.mark.parametrize("name", sorted(trl_adapter.TRL_HOOKS))
def test_private_hook_exists_with_its_signature(name):
    hook = getattr(trl.DPOTrainer, name, None)
    assert callable(hook), (
        f"trl {trl.__version__}: DPOTrainer.{name} is gone; RCDPOTrainer overrides or calls it")
    got = tuple(inspect.signature(hook).parameters)
    assert got == trl_adapter.TRL_HOOKS[name], (
        f"trl {trl.__version__}: DPOTrainer.{name} now takes {got}, the adapter was written "
        f"for {trl_adapter.TRL_HOOKS[name]}")
    trl_adapter.check_trl_hooks()  # the adapter's own guard agrees


def test_compute_loss_still_has_the_contract_the_proxy_relies_on():
    # _CalibratedPolicy stands in for the model inside DPOTrainer._compute_loss: TRL must call
    # it with fused_lm_head=True, read .log_probs, and take the reference log-probabilities
    # from `inputs` when precompute_ref_logps is set.
    src = inspect.getsource(trl.DPOTrainer._compute_loss)
    for needle in ("fused_lm_head=True", ".log_probs", "self.precompute_ref_logps",
                   "ref_chosen_logps", "ref_rejected_logps"):
        assert needle in src, (f"trl {trl.__version__}: DPOTrainer._compute_loss no longer "
                               f"contains {needle!r}; RCDPOTrainer._compute_loss depends on it")


def test_check_fails_loudly_naming_the_hook():
    class Renamed(trl.DPOTrainer):
        _compute_loss = None  # as if TRL had removed the hook

    with pytest.raises(RuntimeError, match=r"private TRL hook DPOTrainer\._compute_loss\(self, "
                                           r"model, inputs, return_outputs\).*trl>=1\.16,<1\.17"):
        trl_adapter.check_trl_hooks(Renamed)

    class Reshaped(trl.DPOTrainer):
        def compute_ref_log_probs(self, model, inputs, extra):
            pass

    with pytest.raises(RuntimeError, match=r"DPOTrainer\.compute_ref_log_probs\(self, model, "
                                           r"inputs, extra\)"):
        trl_adapter.check_trl_hooks(Reshaped)


def test_pyproject_pins_trl_to_the_tested_range():
    from packaging.requirements import Requirement

    deps = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["llm"]
    (spec,) = [Requirement(d) for d in deps if Requirement(d).name == "trl"]
    assert spec.specifier.contains(trl.__version__), (
        f"installed trl {trl.__version__} is outside the pinned range {spec.specifier}")
    assert any(s.operator == "<" for s in spec.specifier), "TRL needs an upper bound"
    assert not spec.specifier.contains("1.17.0") and not spec.specifier.contains("1.15.0")
