# Two commands do all the set-up on a fresh machine (see README.md):
#   make demo   install, grade the bundled sample submissions into out/, then write the class
#               report (out/report.html) and one feedback page per submission (out/feedback/)
#   make test   install, then check the layout's import contracts and run the whole test suite (which runs
#               `grader validate`, the course audit, once: tests/test_validate.py)
# Both install into .venv with a CPU build of torch (TORCH= to change the pin).

VENV ?= .venv
PYTHON ?= python3
TORCH ?= torch==2.13.0
PY := $(VENV)/bin/python
SAMPLES ?= samples

.PHONY: setup demo test test-fast bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

demo: setup
	$(PY) bench/make_submissions.py --out $(SAMPLES) --copies 1
	$(VENV)/bin/grader grade $(SAMPLES) --out out
	$(VENV)/bin/grader report out --out out/report.html
	$(VENV)/bin/grader feedback out --out out/feedback

test: setup
	$(VENV)/bin/lint-imports
	$(PY) -m pytest tests -q

test-fast: setup
	$(VENV)/bin/lint-imports
	$(PY) -m pytest tests -q -m "not slow"

bench: setup
	$(PY) bench/benchmark.py

clean:
	rm -rf $(VENV) out $(SAMPLES) bench-out
