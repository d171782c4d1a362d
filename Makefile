# `make run` and `make test` each set up .venv when it is missing, then serve / test. `make run` installs what
# serving needs; `make test` adds the test tools. `make run ARGS="--watch --strict-auth"` passes serve's flags.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
HOST ?= 127.0.0.1
PORT ?= 4010
ARGS ?=
KINDGI := --spec spec/kindgi.yaml --fixtures fixtures

.PHONY: install install-test browser redis airflow run run-kindgi-official test lint validate contract soak bench bench-sdks bench-contract \
	clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $(STAMP)

install-test: $(TEST_STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(TEST_STAMP)

run: install
	$(BIN)/mockserver serve $(KINDGI) --host $(HOST) --port $(PORT) $(ARGS)

# Kindgi's official description (issue 31): `@kindgi/api/openapi.json` from the published kindgi-cli wheel, fetched
# with pip into ~/.cache/mockserver/kindgi/ (never the checkout), served with --stateful and no fixtures
run-kindgi-official: install
	@spec=$$($(BIN)/python bench/sdks.py --fetch-only) && \
		$(BIN)/mockserver serve --spec "$$spec" --stateful --host $(HOST) --port $(PORT) $(ARGS)

# the dashboard's browser tests drive Debian's chromium (Playwright cannot download a browser here)
browser:
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends chromium >/dev/null) || \
		echo "make: chromium could not be installed: the browser tests will be skipped"

# the shared-state tests start real redis-servers on free ports (Debian's package; its own service is not used)
redis:
	@command -v redis-server >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends redis-server >/dev/null) || \
		echo "make: redis-server could not be installed: the shared-state tests will be skipped"

# Apache Airflow's description (issue 17's measure), fetched with pip into ~/.cache/mockserver, never the checkout
airflow: install-test
	@$(BIN)/python bench/airflow.py --fetch-only >/dev/null 2>&1 || \
		echo "make: Airflow's description could not be fetched: tests/engine/test_airflow.py will be skipped"

test: install-test browser redis airflow
	$(BIN)/python -m pytest -n auto --dist worksteal -q

# ruff (pyflakes, pycodestyle, bugbear, isort, pyupgrade), mypy and import-linter (the layers), as configured in
# pyproject.toml
lint: install-test
	$(BIN)/ruff check mockserver tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

validate: install
	$(BIN)/mockserver validate $(KINDGI)

# the contract (issue 5): `make contract` checks the mock in-process; URL=… TOKEN=… a running server
contract: install-test
	$(BIN)/mockserver contract $(KINDGI) $(if $(URL),--url $(URL)) $(if $(TOKEN),--token $(TOKEN)) $(CONTRACT_ARGS)

soak: install-test
	$(BIN)/python bench/soak.py

# side-by-side benchmark (issue 6): loopback only, about 8 minutes (three wrk rounds a row); writes bench/results/
bench: install-test
	$(BIN)/python -c "import gunicorn" 2>/dev/null || $(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python bench/run.py

# real SDKs against the mock (issue 31): the official `kindgi` SDK against `run-kindgi-official`'s mock, Prefect's
# client against its real server and against the mock of its description; each SDK in its own venv under
# ~/.cache/mockserver/sdks/ (downloads; a few minutes). `make bench-sdks SDKS_ARGS='kindgi --runs 2'`
bench-sdks: install
	$(BIN)/python bench/sdks.py $(SDKS_ARGS)

# `mockserver contract --url` beside plain `schemathesis run` (issue 34): the same target, description, checks and
# budget, on Prefect's real server (installed as bench-sdks does) and the Kindgi mock; then an in-process run of
# Prefect's 188-operation description. Not part of `make bench`; a full budget takes a quarter of an hour.
# `make bench-contract CONTRACT_SPEED_ARGS='kindgi --max-examples 10'`
bench-contract: install-test
	$(BIN)/python bench/contract_speed.py $(CONTRACT_SPEED_ARGS)

# the published corpus (issues 8, 17, 19), mocked with no fixtures and checked by `mockserver contract` itself in a
# positive and a negative mode (docs/COMPATIBILITY.md); writes bench/results/corpus.json. Skipped (exit 0) when
# ../shared/corpus is absent.
corpus: install-test
	$(BIN)/python bench/corpus.py $(CORPUS_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
