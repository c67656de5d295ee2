# memlab: two commands.  `make lab` opens the course, `make test` checks all of it.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.memlab-installed
PORT ?= 8888

.PHONY: lab test unit lessons-test grading-test browser-test exercises bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

lab: $(STAMP)
	@scripts/system-deps.sh
	$(VENV)/bin/jupyter lab --no-browser --ServerApp.root_dir=lessons --port=$(PORT) \
		$$( [ "$$(id -u)" = 0 ] && echo --allow-root )

test: $(STAMP)
	@scripts/system-deps.sh --browser
	$(PY) -m pytest -q -rs tests lessons --nbval-lax --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg

# Regenerate exercises/ from solutions/ (refuses to overwrite a student's edits without FORCE=1).
exercises: $(STAMP)
	$(VENV)/bin/memlab assign solutions --out exercises $(if $(FORCE),--force)

bench: $(STAMP)
	@for f in bench/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
