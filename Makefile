# The companion's build. Two commands do everything, each installing what it
# needs first into a local virtual environment:
#   make rebuild-all   execute every notebook (papermill, SCALE=quick), render the published
#                      paper tier beside it without computing, and build the book
#   make test          the whole test suite
# Other targets: scorecard, publish, bench, lint, book, clean. `make help` lists them.

SHELL := /bin/bash
.DELETE_ON_ERROR:
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# One exact torch first. Where pip's configuration offers a local CPU wheel it
# takes that; elsewhere PyPI's default build (CUDA on Linux). Override it, e.g.
#   make rebuild-all TORCH_INSTALL="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126"
# or TORCH_INSTALL= to keep a torch already present in the environment.
TORCH_INSTALL ?= torch==2.13.0
STAMP := $(VENV)/.installed

SCALE ?= quick
BOOK ?= book
GEN := $(BOOK)/generated
CLAIMS := $(GEN)/claims
NOTEBOOKS := $(basename $(notdir $(wildcard notebooks/*.py)))
EXECUTED := $(NOTEBOOKS:%=$(GEN)/%.ipynb)
FEDLIB_SRC := $(shell find fedlib -name '*.py')
PYTEST_ARGS ?=

.PHONY: help install test rebuild-all notebooks book scorecard bench lint clean publish lab FORCE

help:
	@echo "make rebuild-all  execute every notebook at SCALE=$(SCALE) and build the book into $(BOOK)/_build/html"
	@echo "make test         run the whole test suite"
	@echo "make scorecard    print every evaluated claim (after rebuild-all)"
	@echo "make bench        speed benchmarks, as ratios against baselines measured in the same run"
	@echo "make publish      copy the finished runs of SCALE=$(SCALE) from the local cache into data/published (commit them)"
	@echo "make lint         ruff"
	@echo "make lab          JupyterLab on notebooks/: open a chapter's .py as a notebook, run it cell by cell"
	@echo "make clean        remove executed notebooks and the built book (keeps cached runs)"

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(if $(strip $(TORCH_INSTALL)),$(PY) -m pip install --quiet $(TORCH_INSTALL))
	$(PY) -m pip install --quiet -e ".[book,dev]"
	touch $@

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# A chapter by hand: JupyterLab serves notebooks/<id>.py as a notebook (jupytext), and
# saving writes the .py back, the source of truth.
lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks

lint: $(STAMP)
	$(VENV)/bin/ruff check fedlib tests notebooks

# The tier is part of every executed notebook's inputs: changing SCALE reruns them.
$(GEN)/scale: FORCE
	@mkdir -p $(GEN)
	@if [ "$$(cat $@ 2>/dev/null)" != "$(SCALE)" ]; then echo "$(SCALE)" > $@; fi

# The paper tier of every chapter rendered from stored runs (the local cache and the
# published ones in data/published): nothing is computed. A chapter whose paper-tier
# runs are not all stored gets $(STORED)/<paper>.missing saying how many are missing, and
# its paper-tier claims are NOT-RUN. The chapters and the scorecard show these verdicts
# beside the build's own tier. Done for the quick tier, the book's (a smoke build skips it,
# and a paper build is the paper tier itself).
STORED := $(CLAIMS)/published
PUBLISHED_FILES := $(shell find data/published -type f 2>/dev/null)
STORED_STEP := $(if $(filter quick,$(SCALE)),$(STORED)/%.done,$(STORED)/%.$(SCALE))

$(STORED)/%.done: notebooks/%.py $(FEDLIB_SRC) $(PUBLISHED_FILES) | $(STAMP)
	@mkdir -p $(STORED) $(GEN)/published
	$(PY) -m fedlib.execute $< $(GEN)/published/$*.ipynb --cwd . --published-only \
	    -p scale paper -p claims_dir $(STORED)
	rm -f $(STORED)/$*.smoke $(STORED)/$*.paper
	touch $@

# Other builds put a page in its place saying so (the book lists it under each chapter).
$(STORED)/%.$(SCALE): notebooks/%.py | $(STAMP)
	@mkdir -p $(STORED) $(GEN)/published
	$(PY) -m fedlib.execute $< $(GEN)/published/$*.ipynb --note "This build is of the \
	    $(SCALE) tier; the paper tier is rendered from stored runs by quick builds \
	    (make rebuild-all)."
	rm -f $(STORED)/$*.done $(STORED)/$*.json $(STORED)/$*.missing
	touch $@

# One pattern rule per notebook: py:percent -> papermill-executed ipynb, its
# parameters checked first (fedlib.execute). A failing notebook leaves its partial
# output in $(GEN)/tmp (the scorecard then reports its old claims as stale) and
# fails the build.
$(GEN)/%.ipynb: notebooks/%.py $(FEDLIB_SRC) $(GEN)/scale $(STORED_STEP) | $(STAMP)
	@mkdir -p $(GEN)/tmp $(CLAIMS)
	$(PY) -m fedlib.execute $< $(GEN)/tmp/$*.out.ipynb --cwd . \
	    -p scale $(SCALE) -p claims_dir $(CLAIMS)
	mv $(GEN)/tmp/$*.out.ipynb $@

notebooks: $(EXECUTED)

$(GEN)/scorecard.md: $(EXECUTED) $(STAMP)
	$(PY) -m fedlib.claims $(CLAIMS) --runs $(GEN) --markdown $@

$(GEN)/status.md: $(EXECUTED) $(STAMP)
	$(PY) -m fedlib.status $(GEN) --output $@

# --all reads every page again (seconds: the notebooks are executed already), so a label
# that moved from one page to another does not linger in Sphinx's saved environment.
book: $(GEN)/scorecard.md $(GEN)/status.md
	@mkdir -p $(GEN)/extra/data
	$(VENV)/bin/jupyter-book build $(BOOK) --all --warningiserror --keep-going --quiet
	@echo "book: $(BOOK)/_build/html/index.html"

rebuild-all: book

scorecard: $(STAMP)
	@$(PY) -m fedlib.claims $(CLAIMS) --runs $(GEN)

publish: $(STAMP)
	$(PY) -m fedlib.published export --tier $(SCALE)
	$(PY) -m fedlib.published status

bench: $(STAMP)
	$(PY) -m fedlib.bench

clean:
	rm -rf $(GEN) $(BOOK)/_build
