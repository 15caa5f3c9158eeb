# The two commands of the README: `make quickstart` and `make test`. Both set up .venv first.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# The torch/torchvision pair that lies on the project's machines (a CUDA build that runs on CPU).
TORCH_PAIR := torch==2.14.1 torchvision==0.29.1
# FFmpeg's shared libraries (Debian 12: FFmpeg 5.1), which torchcodec loads.
FFMPEG_LIBS := libavcodec59 libavformat59 libavfilter8 libavdevice59 libswscale6 libavutil57

.PHONY: setup quickstart lint test bench docs clean

$(VENV)/.installed: pyproject.toml
	# torchcodec (a decoder option, in the dev extra) loads the system's FFmpeg libraries.
	ldconfig -p | grep -q libavfilter || { apt-get update -q && apt-get install -y -q --no-install-recommends $(FFMPEG_LIBS); } \
		|| echo "missing: FFmpeg 5.1 libraries ($(FFMPEG_LIBS)), needed by decoder='torchcodec' only"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_PAIR)
	# lmms-eval would otherwise move math-verify off the pin the rewards are tested with.
	$(PY) -m pip install -q -e ".[dev,eval,cluster]" math-verify==0.9.0
	touch $@

# Code rewards run answers in bubblewrap: installed with apt-get where missing and we are root, else named.
setup: $(VENV)/.installed
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && { \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; }; } >/dev/null 2>&1; } || true
	@command -v bwrap >/dev/null || echo "missing: bubblewrap (bwrap), needed by code rewards:" \
		"apt-get install bubblewrap, or set reward.code.sandbox='remote' (see docs/rewards.md)"

quickstart: setup
	$(VENV)/bin/evr1 run quickstart

# CI runs it before the tests.
lint: setup
	$(VENV)/bin/ruff check .

test: setup
	$(PY) -m pytest -q -p no:cacheprovider

bench: setup
	$(PY) -m pytest benchmarks -q -p no:cacheprovider --benchmark-only

# docs/specs.md is generated from the specs (tests/test_docs_specs.py fails while it is stale).
docs: setup
	$(PY) -m evr1.docs_specs

clean:
	rm -rf $(VENV) runs .pytest_cache
