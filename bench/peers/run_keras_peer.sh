#!/usr/bin/env bash
# Runs bench/peers/keras_train.py with tensorflow-cpu, in the venv bench/peers/run_tf_peer.sh
# makes and uses (SHARDFLOW_PEER_VENV). A benchmark helper, never part of CI; exit 77 when the
# package index cannot be reached.
set -euo pipefail
exec "$(cd "$(dirname "$0")" && pwd)/run_tf_peer.sh" --script keras_train.py "$@"
