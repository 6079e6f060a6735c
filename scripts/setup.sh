#!/usr/bin/env bash
# Creates .venv (if needed) and installs portx with its test extra. Idempotent and quick when done.
# torch is installed first, pinned to the CPU build, so pyproject's range is already met.
set -euo pipefail
# Keras picks its backend at import; without this a fresh machine defaults to TensorFlow.
export KERAS_BACKEND="${KERAS_BACKEND:-jax}"
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.portx-installed
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q "torch==2.13.0" 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -m pip install -q -e ".[test]" 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import portx, torch, keras, jax" 
  echo "$want" > "$stamp"
fi
