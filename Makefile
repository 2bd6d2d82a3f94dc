# The companion's build. Three commands do everything, each installing what it
# needs first into a local virtual environment:
#   make site          the site from stored runs only (data/published and the local cache),
#                      nothing computed: every chapter's paper tier, then its quick tier, and
#                      the book, in minutes (what the published site runs)
#   make rebuild-all   execute every notebook (papermill, SCALE=quick), computing the runs
#                      that are not stored, render the paper tier beside it, build the book
#   make test          the whole test suite
# Other targets: scorecard, publish, bench, lint, book, clean. `make help` lists them.

SHELL := /bin/bash
.DELETE_ON_ERROR:
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The environment is locked: requirements/<platform>/ pins every package to an exact version
# with its hashes (lock.txt), torch apart (torch.txt: the CPU build on Linux, whose wheels
# come from PyTorch's own index). `make lock` writes both from pyproject.toml's ranges.
# A CUDA user swaps torch, e.g.
#   make install TORCH_INSTALL="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126"
# or TORCH_INSTALL= keeps a torch already present in the environment.
TORCH_VERSION := 2.13.0
PLATFORM := $(shell uname -s | tr A-Z a-z | sed 's/darwin/macos/')-$(shell uname -m | sed 's/aarch64/arm64/')
LOCK := requirements/$(PLATFORM)
TORCH_INSTALL ?= --no-deps --require-hashes -r $(LOCK)/torch.txt
STAMP := $(VENV)/.installed

SCALE ?= quick
BOOK ?= book
GEN := $(BOOK)/generated
CLAIMS := $(GEN)/claims
NOTEBOOKS := $(basename $(notdir $(wildcard notebooks/*.py)))
EXECUTED := $(NOTEBOOKS:%=$(GEN)/%.ipynb)
FEDLIB_SRC := $(shell find fedlib -name '*.py')
PYTEST_ARGS ?=

.PHONY: help install lock check-updates test site rebuild-all notebooks book scorecard bench lint clean publish lab FORCE

help:
	@echo "make site         render every chapter from stored runs (paper and quick tiers, nothing"
	@echo "                  computed) and build the book into $(BOOK)/_build/html, in minutes"
	@echo "make rebuild-all  execute every notebook at SCALE=$(SCALE) and build the book into $(BOOK)/_build/html"
	@echo "make test         run the whole test suite"
	@echo "make scorecard    print every evaluated claim (after rebuild-all)"
	@echo "make bench        speed benchmarks, as ratios against baselines measured in the same run"
	@echo "make publish      copy the finished runs of SCALE=$(SCALE) from the local cache into data/published (commit them)"
	@echo "make lint         ruff"
	@echo "make lock         pin every package again (requirements/<platform>/) from pyproject.toml's ranges"
	@echo "make check-updates  build the site with the newest versions allowed, name the upgrade that breaks it"
	@echo "make lab          JupyterLab on notebooks/: open a chapter's .py as a notebook, run it cell by cell"
	@echo "make clean        remove executed notebooks and the built book (keeps cached runs)"

install: $(STAMP)

# pip check: the locked packages and torch agree with every package's own requirements.
$(STAMP): pyproject.toml requirements/build.in $(wildcard $(LOCK)/*.txt)
	@test -f $(LOCK)/lock.txt || { echo "No locked environment for $(PLATFORM) (requirements/ has" \
	    "$$(ls requirements | grep -v '\.in$$' | tr '\n' ' ')): run make lock on this platform," \
	    "or install the ranges: pip install -e '.[book,dev]'" >&2; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(if $(strip $(TORCH_INSTALL)),$(PY) -m pip install --quiet $(TORCH_INSTALL))
	$(PY) -m pip install --quiet --no-deps --require-hashes -r $(LOCK)/lock.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	$(PY) -m pip check
	touch $@

# The lock, written again from pyproject.toml's ranges (the newest versions they allow today)
# for each platform it covers; review the diff and commit it. uv resolves for a platform
# other than its own (macOS 14 or newer: torch's arm64 wheels need it). TORCH_WHEELS: where
# the CPU build of torch is listed (a flat page or a folder of wheels). The platforms'
# names and targets are also those of requirements/check_updates.py's UV_PLATFORMS.
LOCK_PLATFORMS := linux-x86_64:x86_64-manylinux_2_28:+cpu macos-arm64:aarch64-apple-darwin:
TORCH_WHEELS ?= https://download.pytorch.org/whl/cpu/torch/
UV ?= $(if $(wildcard $(PY)),$(PY) -m uv,uv)
UV_COMPILE = $(UV) pip compile --quiet --python-version 3.11 --generate-hashes \
    --custom-compile-command "make lock" pyproject.toml requirements/build.in \
    --extra book --extra dev

lock:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	export MACOSX_DEPLOYMENT_TARGET=14.0; for spec in $(LOCK_PLATFORMS); do \
	    IFS=: read -r name target local <<< "$$spec"; mkdir -p requirements/$$name; \
	    echo "torch==$(TORCH_VERSION)$$local" > $$tmp/torch.in; \
	    options="--python-platform $$target --overrides $$tmp/torch.in"; \
	    if [ -n "$$local" ]; then options="$$options --find-links $(TORCH_WHEELS)"; fi; \
	    $(UV_COMPILE) $$options -o $$tmp/all.txt; \
	    $(UV_COMPILE) $$options --no-emit-package torch -o $$tmp/lock.txt; \
	    { echo "# torch for $$name, installed before lock.txt (make install)."; \
	      if [ -n "$$local" ]; then \
	          echo "# Its CPU build is on PyTorch's index; pip looks there for torch alone."; \
	          echo "--extra-index-url https://download.pytorch.org/whl/cpu"; fi; \
	      awk '/^[^ #]/ { split($$0, name, "=="); keep = (name[1] == "torch") } \
	           keep && !/^ *#/' $$tmp/all.txt; } > $$tmp/torch.txt; \
	    grep -q -- '--hash=' $$tmp/torch.txt; \
	    mv $$tmp/lock.txt $$tmp/torch.txt requirements/$$name/; \
	    echo "locked requirements/$$name"; \
	done

# In parallel, one worker a core (pytest-xdist), a test file on one worker: each whole-book
# build is made once, its file first (tests/conftest.py).
test: $(STAMP)
	$(PY) -m pytest -n auto --dist loadfile $(PYTEST_ARGS)

# A chapter by hand: JupyterLab serves notebooks/<id>.py as a notebook (jupytext), and
# saving writes the .py back, the source of truth. It listens on this machine only
# (localhost), behind the token in the URL it prints. JupyterLab refuses to start as root
# unless told to: root (often the only user in a container) gets --allow-root, and a line
# saying why.
LAB := $(VENV)/bin/jupyter lab notebooks --ServerApp.ip=localhost
lab: $(STAMP)
	@allow=; if [ "$$(id -u)" = 0 ]; then allow=--allow-root; \
	    echo "make lab: running as root (id -u is 0, as in many containers): passing" \
	        "--allow-root, without which jupyter lab refuses to start"; \
	fi; \
	echo "$(LAB) $$allow"; exec $(LAB) $$allow

lint: $(STAMP)
	$(VENV)/bin/ruff check fedlib tests notebooks requirements

# Dependency drift, on purpose (not in CI): the newest versions pyproject.toml allows,
# tried against the site in a throw-away clone and environment; the upgrade that breaks
# it is found by halving. Nothing of this checkout changes.
check-updates: $(STAMP)
	$(PY) requirements/check_updates.py --torch-wheels $(TORCH_WHEELS)

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
	$(PY) -m fedlib.render.execute $< $(GEN)/published/$*.ipynb --cwd . --published-only \
	    -p scale paper -p claims_dir $(STORED)
	rm -f $(STORED)/$*.smoke $(STORED)/$*.paper
	touch $@

# Other builds put a page in its place saying so (the book opens each chapter with it).
TIER_NOTE_smoke := This build is of the smoke tier, which only checks that every code path \
    runs: its page follows. The paper tier is rendered from stored runs by make site and \
    by quick builds (make rebuild-all).
TIER_NOTE_paper := This build computed the paper tier itself: its page follows.
$(STORED)/%.$(SCALE): notebooks/%.py | $(STAMP)
	@mkdir -p $(STORED) $(GEN)/published
	$(PY) -m fedlib.render.execute $< $(GEN)/published/$*.ipynb --page lead \
	    --note "$(or $(TIER_NOTE_$(SCALE)),This build is of the $(SCALE) tier: its page follows.)"
	rm -f $(STORED)/$*.done $(STORED)/$*.json $(STORED)/$*.missing $(STORED)/$*.gaps.jsonl
	touch $@

# One pattern rule per notebook: py:percent -> papermill-executed ipynb, its
# parameters checked first (fedlib.render.execute). A failing notebook leaves its partial
# output in $(GEN)/tmp (the scorecard then reports its old claims as stale) and
# fails the build.
$(GEN)/%.ipynb: notebooks/%.py $(FEDLIB_SRC) $(GEN)/scale $(STORED_STEP) | $(STAMP)
	@mkdir -p $(GEN)/tmp $(CLAIMS)
	$(PY) -m fedlib.render.execute $< $(GEN)/tmp/$*.out.ipynb --cwd . --page tier \
	    -p scale $(SCALE) -p claims_dir $(CLAIMS)
	mv $(GEN)/tmp/$*.out.ipynb $@
	rm -f $(GEN)/$*.md $(CLAIMS)/$*.missing $(CLAIMS)/$*.gaps.jsonl

notebooks: $(EXECUTED)

$(GEN)/scorecard.md: $(EXECUTED) $(STAMP)
	$(PY) -m fedlib.render.scorecard $(CLAIMS) --runs $(GEN) --markdown $@

$(GEN)/status.md: $(EXECUTED) $(STAMP)
	$(PY) -m fedlib.render.status $(GEN) --output $@

# --all reads every page again (seconds: the notebooks are executed already), so a label
# that moved from one page to another does not linger in Sphinx's saved environment.
# The navigation names each chapter's second page by its tier: $(BOOK)/_toc.yml says
# quick, the site's and the default build's; another build's copy says its own.
QUICK_PAGE := Quick tier: reduced scale, reruns in minutes
PAGE_TITLE_smoke := Smoke tier: every code path in seconds, no results
PAGE_TITLE_paper := Paper tier, computed by this build
TOC := $(if $(filter quick,$(SCALE)),$(BOOK)/_toc.yml,$(GEN)/_toc.yml)

$(GEN)/_toc.yml: $(BOOK)/_toc.yml $(GEN)/scale
	sed 's/title: "$(QUICK_PAGE)"/title: "$(or $(PAGE_TITLE_$(SCALE)),$(SCALE) tier)"/' $< > $@

book: $(GEN)/scorecard.md $(GEN)/status.md $(TOC)
	@mkdir -p $(GEN)/extra/data
	$(VENV)/bin/jupyter-book build $(BOOK) --toc $(abspath $(TOC)) --all --warningiserror --keep-going \
	    --quiet
	@echo "book: $(BOOK)/_build/html/index.html"

rebuild-all: book

# The site from stored runs only: each chapter's paper tier (the page that opens it) and
# its quick tier, both rendered with computing off (FEDLIB_COMPUTE=0), then the scorecard,
# the status page and the book. Every page is rendered again (minutes). A tier whose runs
# are not all stored gets a page saying so, and its claims are NOT-RUN; when the quick
# tier of a chapter is missing, the scorecard page says why it cannot be drawn (the
# scorecard's --not-drawn-page writes that page, its error shown as written). The pages
# are renders, not runs: $(GEN)/scale says so, and `make rebuild-all` executes them again.
SITE_TIER := quick
SITE_PAGES := $(NOTEBOOKS:%=$(GEN)/rendered/%)
$(GEN)/rendered/%: notebooks/%.py FORCE | $(STAMP)
	@mkdir -p $(STORED) $(CLAIMS) $(GEN)/published $(GEN)/rendered
	$(PY) -m fedlib.render.execute $< $(GEN)/published/$*.ipynb --cwd . --published-only \
	    --page lead -p scale paper -p claims_dir $(STORED)
	$(PY) -m fedlib.render.execute $< $(GEN)/$*.ipynb --cwd . --published-only \
	    --page tier -p scale $(SITE_TIER) -p claims_dir $(CLAIMS)
	rm -f $(STORED)/$*.done $(STORED)/$*.smoke $(STORED)/$*.paper
	touch $@

site: $(SITE_PAGES) | $(STAMP)
	@echo "$(SITE_TIER), rendered from stored runs" > $(GEN)/scale
	@mkdir -p $(GEN)/extra/data
	$(PY) -m fedlib.render.scorecard $(CLAIMS) --runs $(GEN) --markdown $(GEN)/scorecard.md \
	    --not-drawn-page
	$(PY) -m fedlib.render.status $(GEN) --output $(GEN)/status.md
	$(VENV)/bin/jupyter-book build $(BOOK) --all --warningiserror --keep-going --quiet
	@echo "site: $(BOOK)/_build/html/index.html"

scorecard: $(STAMP)
	@$(PY) -m fedlib.render.scorecard $(CLAIMS) --runs $(GEN)

publish: $(STAMP)
	$(PY) -m fedlib.runs export --tier $(SCALE)
	$(PY) -m fedlib.runs status

bench: $(STAMP)
	$(PY) -m fedlib.bench

clean:
	rm -rf $(GEN) $(BOOK)/_build
