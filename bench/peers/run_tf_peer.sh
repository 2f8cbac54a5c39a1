#!/usr/bin/env bash
# Runs a TensorFlow peer script of bench/peers (tf_data_pipeline.py, or the one named by
# --script NAME first, e.g. keras_train.py) in a virtual environment with tensorflow-cpu from
# the Python package index (created on first use in ${SHARDFLOW_PEER_VENV:-build/peers-venv}).
# A benchmark helper, never part of CI. Exit 77 with a message when the index cannot be reached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
script=tf_data_pipeline.py
if [ "${1:-}" = --script ]; then
  script=$2
  shift 2
fi
venv=${SHARDFLOW_PEER_VENV:-$here/../../build/peers-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tensorflow' 2>/dev/null; then
  echo "run_tf_peer: creating $venv with tensorflow-cpu (one-time, several hundred MB)" >&2
  /usr/bin/python3 -m venv "$venv"
  if ! "$venv/bin/pip" install -q tensorflow-cpu; then
    echo "run_tf_peer: SKIP: could not install tensorflow-cpu from the package index" >&2
    exit 77
  fi
fi
exec "$venv/bin/python" "$here/$script" "$@"
