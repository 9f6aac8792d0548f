# The two commands of the README:
#   make book   set up (once) and build the book into _build/html
#   make test   set up (once) and run the tests
# Set-up creates or reuses the virtual environment $(VENV); a second run installs nothing new.

PYTHON     ?= python3
VENV       ?= .venv
# torch goes in first, on its own: installing the requirements' range with no torch present
# would fetch the newest release (with several GB of CUDA packages on Linux). Override it, e.g.
#   make test TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
TORCH_SPEC ?= torch==2.13.0
PY         := $(VENV)/bin/python
STAMP      := $(VENV)/.setup-done

.PHONY: setup test book clean

setup: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.txt pyproject.toml | $(PY)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install $(TORCH_SPEC)
	$(PY) -m pip install -r requirements.txt
	# d2l is only a numerical oracle for the tests and its data hub; its own pins
	# (numpy==1.23.5, torch==2.0.0, ...) do not install on Python 3.12, hence --no-deps.
	$(PY) -m pip install --no-deps d2l==1.0.3
	$(PY) -m pip install --no-deps -e .
	touch $(STAMP)

test: setup
	$(PY) -m pytest

book: setup
	$(VENV)/bin/jupyter-book build . --all -W --keep-going

clean:
	rm -rf _build
