# Two commands do all the set-up on a fresh machine (see README.md):
#   make demo   install, grade the bundled sample submissions into out/, then write the class
#               report (out/report.html) and one feedback page per submission (out/feedback/)
#   make test   install, then check the layout's import contracts and run the whole test suite (which runs
#               `grader validate`, the course audit, once: tests/test_validate.py)
# Both install into .venv with a CPU build of torch (TORCH= to change the pin).
#   make gpu-check   on a CUDA machine: grade the corpus with --device cuda and --device cpu, compare,
#               measure (bench/gpu_check.py); installs nothing, runs the checkout with GPU_PYTHON (the
#               venv's python if there is one, else python3); without a GPU it says so and exits 2

VENV ?= .venv
PYTHON ?= python3
TORCH ?= torch==2.13.0
PY := $(VENV)/bin/python
SAMPLES ?= samples

GPU_PYTHON ?= $(if $(wildcard $(PY)),$(PY),python3)

.PHONY: setup demo test test-fast bench gpu-check clean

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
	$(PY) bench/benchmark.py --readme README.md

gpu-check:
	PYTHONPATH=$(CURDIR) $(GPU_PYTHON) bench/gpu_check.py $(GPU_CHECK_ARGS)

clean:
	rm -rf $(VENV) out $(SAMPLES) bench-out
