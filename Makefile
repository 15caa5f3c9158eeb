# The two commands of the README: `make quickstart` and `make test`. Both set up .venv first.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# The torch/torchvision pair that lies on the project's machines (a CUDA build that runs on CPU).
TORCH_PAIR := torch==2.14.1 torchvision==0.29.1

.PHONY: setup quickstart test bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_PAIR)
	# lmms-eval would otherwise move math-verify off the pin the rewards are tested with.
	$(PY) -m pip install -q -e ".[dev,eval,cluster]" math-verify==0.9.0
	touch $@

setup: $(VENV)/.installed

quickstart: setup
	$(VENV)/bin/evr1 run quickstart

test: setup
	$(PY) -m pytest -q -p no:cacheprovider

bench: setup
	$(PY) -m pytest benchmarks -q -p no:cacheprovider --benchmark-only

clean:
	rm -rf $(VENV) runs .pytest_cache
