# Two commands for a newcomer: `make serve` and `make test`. Both install what they need first.
SHELL := /bin/bash
UV_VERSION := 0.13.8
UV := $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)
PY := 3.11
export UV_PYTHON_DOWNLOADS := never

.PHONY: serve test setup setup-serve setup-test setup-bench lint typecheck unit e2e bench clean

$(UV):
	python3 -m pip install --user --quiet "uv==$(UV_VERSION)"

# Everything the tests and linters need: runtime + the `aws` extra + the `dev` group.
setup: $(UV)
	$(UV) sync --frozen --all-extras --group dev --python $(PY)

# Runtime only (no test or dev tools); --inexact keeps them when `make test` installed them already.
setup-serve: $(UV)
	$(UV) sync --frozen --inexact --python $(PY)

# Debian and npm parts the tests use: chromium for the portal and browser tests, Node 22 and
# the npm packages (conformance suite, oidc-provider) from package-lock.json.
setup-test: setup
	bash infra/install-test-deps.sh

# `make serve PORT=8800 HOST=127.0.0.1` passes them on to `workbench serve --port/--host`.
serve: setup-serve
	$(UV) run --frozen --no-sync workbench serve $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

lint: setup
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .
	$(UV) run --frozen mypy
	$(UV) run --frozen lint-imports

unit: setup
	$(UV) run --frozen pytest -q -m "not e2e"

test: setup-test lint
	$(UV) run --frozen pytest -q

# The benchmarks also need the comparison points (FastMCP, retrieval baselines): the `bench` group.
setup-bench: $(UV)
	$(UV) sync --frozen --all-extras --group dev --group bench --python $(PY)

bench: setup-bench
	$(UV) run --frozen python bench/run_all.py

clean:
	rm -rf .venv node_modules .pytest_cache .mypy_cache .ruff_cache
