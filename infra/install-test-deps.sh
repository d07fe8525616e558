#!/usr/bin/env bash
# Installs what the test suite needs beyond Python packages. Idempotent; quick when done before.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if [ -f package-lock.json ]; then
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
  fi
fi

# aws-sam-cli for the `sam validate --lint` / `sam build` tests, in a venv of its own: its pins
# would fight the project's lock. (`sam build` also needs python3.12 on PATH; see tests/aws.)
SAM_CLI_VERSION=1.170.0
if ! .venv-sam/bin/sam --version 2>/dev/null | grep -q "$SAM_CLI_VERSION"; then
  UV_BIN="${UV:-uv}"
  command -v "$UV_BIN" >/dev/null 2>&1 || UV_BIN="$HOME/.local/bin/uv"
  UV_PYTHON_DOWNLOADS=never "$UV_BIN" venv -q --allow-existing --python "${PY:-3.11}" .venv-sam
  "$UV_BIN" pip install -q --python .venv-sam/bin/python "aws-sam-cli==$SAM_CLI_VERSION"
fi
