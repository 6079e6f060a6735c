#!/usr/bin/env bash
# Creates .venv (if needed) and installs portx with its test extra. Idempotent and quick when done.
# torch is installed first, pinned to the CPU build, so pyproject's range is already met.
# Any failed install stops here with pip's own error: a missing dependency must never turn into
# skipped tests and a green run.
set -euo pipefail
# Keras picks its backend at import; without this a fresh machine defaults to TensorFlow.
export KERAS_BACKEND="${KERAS_BACKEND:-jax}"
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $("$PY" --version)"
  "$PY" -m venv .venv
fi
stamp=.venv/.portx-installed
# PORTX_EXTRAS=tf (comma-separated) adds optional extras to the test set-up; .ci/run sets it
extras="test${PORTX_EXTRAS:+,$PORTX_EXTRAS}"
want=$( (cat pyproject.toml scripts/setup.sh; echo "$extras") | sha256sum | cut -d' ' -f1)
log=.venv/setup.log

step() {  # step "what" cmd...: run cmd, log its output, show pip's error and stop when it fails
  local what=$1 start=$SECONDS
  shift
  echo "setup: $what ..."
  if ! "$@" >>"$log" 2>&1; then
    echo "setup: FAILED: $what (last lines of $log):" >&2
    tail -n 25 "$log" >&2
    exit 1
  fi
  echo "setup: $what done ($((SECONDS - start)) s)"
}

if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  : >"$log"
  step "upgrading pip" .venv/bin/python -m pip install --upgrade pip
  step "installing torch==2.13.0 (CPU build)" .venv/bin/python -m pip install "torch==2.13.0"
  step "installing portx and its extras [$extras] (keras, jax, torchax, pytest, ...)" \
    .venv/bin/python -m pip install -e ".[$extras]"
  step "installing keras-hub==0.32.0 (--no-deps: its tensorflow-text pin is only for tokenizers)" \
    .venv/bin/python -m pip install --no-deps "keras-hub==0.32.0"
  step "checking that every dependency imports" .venv/bin/python -c "import portx, torch, keras, jax, torchax, hypothesis, xdist, onnx, onnxruntime, keras_hub, expecttest"
  case ",$extras," in *,tf,*)
    step "checking that the [tf] extra imports" .venv/bin/python -c "import tensorflow, tf2onnx, tf_keras";;
  esac
  echo "$want" > "$stamp"
fi
