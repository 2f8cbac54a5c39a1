#!/usr/bin/env bash
# Runs bench/peers/torch_train.py in a virtual environment with torch (and numpy) from the
# Python package index, created on first use in
# ${SHARDFLOW_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/shardflow/torch-venv} (several GB: the
# index's Linux wheel brings its CUDA libraries; the CPU is all that is used). A benchmark
# helper, never part of CI. Exit 77 with a message when the index cannot be reached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${SHARDFLOW_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/shardflow/torch-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import torch, numpy' 2>/dev/null; then
  echo "run_torch_peer: creating $venv with torch (one-time, several GB)" >&2
  mkdir -p "$(dirname "$venv")"
  /usr/bin/python3 -m venv "$venv"
  if ! "$venv/bin/pip" install -q torch numpy; then
    echo "run_torch_peer: SKIP: could not install torch from the package index" >&2
    exit 77
  fi
fi
exec "$venv/bin/python" "$here/torch_train.py" "$@"
