# memlab: two commands.  `make lab` opens the course, `make test` checks all of it.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install -q --disable-pip-version-check
LOCK := requirements.lock
STAMP := $(VENV)/.memlab-installed
PORT ?= 8888
JOBS ?= 2
UV_VERSION := 0.13.9
PYTEST := $(PY) -m pytest -q -rs
NBVAL := --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

.PHONY: lab test test-extended unit lessons-test grading-test browser-test lock exercises bench site clean \
	grading-venv release update

# The virtual environment, installed from the lock file (exact versions), then memlab itself.
# The lock pins every extra (test, dask), so `make test` runs the Dask tests too.
$(STAMP): pyproject.toml $(LOCK)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || \
		{ echo "memlab needs Python >= 3.10; $(PYTHON) is $$($(PYTHON) -V 2>&1)." \
		       "Run: make PYTHON=python3.11 ..." >&2; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@test -x $(VENV)/bin/uv || $(PIP) uv==$(UV_VERSION)
	$(VENV)/bin/uv pip install -q --python $(PY) -r $(LOCK)
	$(VENV)/bin/uv pip install -q --python $(PY) --no-deps -e .
	@touch $(STAMP)

# JupyterLab on the course root (lessons/ and exercises/ side by side), lesson 00 first; its terminals
# have the venv's bin on PATH, so `memlab check-work ...` works there.  In a student copy (its
# .gitattributes names the filter) git is told that a notebook only run is unchanged
# (scripts/nbclean.py), so `make update` pulls course updates over lessons run and saved.
LAB_FIRST := /lab/tree/lessons/00_index.ipynb
lab: $(STAMP)
	@scripts/system-deps.sh
	@$(PY) scripts/nbclean.py --install
	PATH="$(abspath $(VENV))/bin:$$PATH" MEMLAB_VENV="$(abspath $(VENV))" MEMLAB_ROOT="$(CURDIR)" \
		$(VENV)/bin/jupyter lab --no-browser --config=scripts/lab_config.py \
		--ServerApp.root_dir=. --LabApp.default_url=$(LAB_FIRST) --port=$(PORT) \
		$$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# As root, grading runs the kernel as an unprivileged user, who must be able to run its interpreter:
# a venv made from a system Python (not pyenv's under /root), with memlab copied in (the checkout
# itself may be unreadable), readable by all, its bytecode compiled (the grading user cannot write
# __pycache__ there: without it every isolated kernel would compile IPython and numpy as it starts).
# The grading tests use it (MEMLAB_GRADING_PYTHON), so the isolation tests run instead of skipping.
# It takes seconds with uv (pinned for `make lock`).
SYSTEM_PYTHON ?= $(firstword $(wildcard /usr/bin/python3.13 /usr/bin/python3.12 /usr/bin/python3.11 \
	/usr/bin/python3.10))
GRADING_VENV ?= /opt/memlab-grading/$(shell printf %s "$(CURDIR)" | cksum | cut -d' ' -f1)
GRADING_STAMP := $(GRADING_VENV)/.memlab-installed
GRADING_ENV = MEMLAB_GRADING_PYTHON=$$(test -f $(GRADING_STAMP) && echo $(GRADING_VENV)/bin/python)
grading-venv: $(STAMP)
	@if [ "$$(id -u)" = 0 ] && [ -n "$(SYSTEM_PYTHON)" ]; then $(MAKE) --no-print-directory $(GRADING_STAMP); \
	else echo "not root, or no system Python >= 3.10: the grading tests that need isolation skip"; fi
$(GRADING_STAMP): $(LOCK) $(shell find memlab -name '*.py')
	@test -x $(VENV)/bin/uv || $(PIP) uv==$(UV_VERSION)
	@mkdir -p $(dir $(GRADING_VENV)) && chmod 755 $(dir $(GRADING_VENV))
	$(VENV)/bin/uv venv -q --allow-existing --python $(SYSTEM_PYTHON) $(GRADING_VENV)
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(GRADING_VENV)/bin/python -r $(LOCK)
	@site=$$($(GRADING_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))') && \
		rm -rf "$$site/memlab" && cp -r memlab "$$site/memlab" && find "$$site/memlab" -name __pycache__ -prune -exec rm -rf {} + && \
		$(GRADING_VENV)/bin/python -m compileall -q "$$site/memlab"
	@chmod -R a+rX $(GRADING_VENV) && touch $@

# Everything, on $(JOBS) processes: each test file (each notebook) stays on one process, and the
# grading tests share one (tests/conftest.py says how the work is shared).  Under 8 minutes on 2
# cores: the tests marked `extended` (JupyterLab on every lesson rather than four, one grade per cheap
# attack and the attack sweep of every exercise, the feedback check of every solution, concurrent
# grades, setup.sh from the package index) cover code that make test covers already, more slowly:
# `make test-extended`.  CI (.ci/run) runs both, so nothing tested is skipped there.
test: $(STAMP) grading-venv
	@scripts/system-deps.sh --browser
	$(GRADING_ENV) $(PYTEST) -n $(JOBS) --dist loadscope tests lessons $(NBVAL) -m "not extended"

test-extended: $(STAMP) grading-venv
	@scripts/system-deps.sh --browser
	$(GRADING_ENV) $(PYTEST) -n $(JOBS) --dist loadscope tests -m extended

# The parts, one by one.
unit: $(STAMP)
	$(PYTEST) -n $(JOBS) --dist loadscope tests --ignore=tests/lessons --ignore=tests/grading

lessons-test: $(STAMP)
	@scripts/system-deps.sh
	$(PYTEST) -n $(JOBS) --dist loadscope lessons tests/lessons $(NBVAL) -m "not browser"

grading-test: $(STAMP) grading-venv
	$(GRADING_ENV) $(PYTEST) -n $(JOBS) --dist loadscope tests/grading

browser-test: $(STAMP)
	@scripts/system-deps.sh --browser
	$(PYTEST) tests/lessons/test_browser.py

# Regenerate the lock file from pyproject.toml (exact versions for every Python >= 3.10).
lock:
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) uv==$(UV_VERSION)
	$(VENV)/bin/uv pip compile pyproject.toml --all-extras --universal --python-version 3.10 \
		--custom-compile-command "make lock" -o $(LOCK)

# Regenerate the exercises from the solutions (refuses to overwrite a student's edits without FORCE=1).
exercises: $(STAMP)
	$(VENV)/bin/memlab assign solutions --out exercises $(if $(FORCE),--force)

# The course as a static website in build/site (the stored notebooks, not re-executed; see README).
site: $(STAMP)
	$(PY) scripts/site.py --out build/site

# The student copy of the course (no solutions, blank exercises): publish it, not this repository.
RELEASE ?= ../memlab-release
release: $(STAMP)
	$(VENV)/bin/memlab release $(RELEASE)

# The course's updates (a student copy cloned from the instructors' repository).
update:
	@python3 scripts/nbclean.py --install && python3 scripts/nbclean.py --refresh
	git pull --no-rebase

bench: $(STAMP)
	@for f in bench/[a-z]*.py; do echo "== $$f"; PYTHONUNBUFFERED=1 $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build
