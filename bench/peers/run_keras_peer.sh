#!/usr/bin/env bash
# Runs bench/peers/keras_train.py in a virtual environment with tensorflow-cpu from the Python
# package index (created on first use in ${SHARDFLOW_PEER_VENV:-build/peers-venv}, the venv
# bench/peers/run_tf_peer.sh also uses). A benchmark helper, never part of CI. Exit 77 with a
# message when the index cannot be reached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${SHARDFLOW_PEER_VENV:-$here/../../build/peers-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tensorflow, keras' 2>/dev/null; then
  echo "run_keras_peer: creating $venv with tensorflow-cpu (one-time, several hundred MB)" >&2
  /usr/bin/python3 -m venv "$venv"
  if ! "$venv/bin/pip" install -q tensorflow-cpu; then
    echo "run_keras_peer: SKIP: could not install tensorflow-cpu from the package index" >&2
    exit 77
  fi
fi
exec "$venv/bin/python" "$here/keras_train.py" "$@"
