#!/usr/bin/env bash
# Runs bench/peers/torch_train.py (or the script named by --script NAME first, e.g.
# torch_image_pipeline.py) in a virtual environment with torch (and numpy) from the Python
# package index, created on first use in
# ${SHARDFLOW_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/shardflow/torch-venv} (several GB: the
# index's Linux wheel brings its CUDA libraries; the CPU is all that is used). The image peer
# also needs torchvision and Pillow: added on first use, torchvision without its dependencies
# so that pip keeps the installed torch. A benchmark helper, never part of CI. Exit 77 with a
# message when the index cannot be reached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
script=torch_train.py
if [ "${1:-}" = --script ]; then
  script=$2
  shift 2
fi
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
if [ "$script" = torch_image_pipeline.py ] &&
  ! "$venv/bin/python" -c 'import torchvision, PIL' 2>/dev/null; then
  echo "run_torch_peer: adding torchvision and pillow to $venv" >&2
  if ! "$venv/bin/pip" install -q --no-deps torchvision pillow; then
    echo "run_torch_peer: SKIP: could not install torchvision from the package index" >&2
    exit 77
  fi
fi
exec "$venv/bin/python" "$here/$script" "$@"
