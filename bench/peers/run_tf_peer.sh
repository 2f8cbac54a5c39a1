#!/usr/bin/env bash
# Runs bench/peers/tf_data_pipeline.py in a virtual environment with tensorflow-cpu from the
# Python package index (created on first use in ${SHARDFLOW_PEER_VENV:-build/peers-venv}).
# A benchmark helper, never part of CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${SHARDFLOW_PEER_VENV:-$here/../../build/peers-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tensorflow' 2>/dev/null; then
  echo "run_tf_peer: creating $venv with tensorflow-cpu (one-time, several hundred MB)" >&2
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q tensorflow-cpu
fi
exec "$venv/bin/python" "$here/tf_data_pipeline.py" "$@"
