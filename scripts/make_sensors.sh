#!/usr/bin/env bash
# Makes the sensor-series data of configs/sensors_lstm_ae.ini in data/sensors/:
#   scripts/make_sensor_csv.py (seeded generator, one CSV per asset) -> data/sensors/csv/
#   shardflow-convert (2 ranks): windows of 32 steps, stride 8, standardized per channel over
#   all ranks' data -> data/sensors/win-0000N-of-00004.tfrecord
# Usage: scripts/make_sensors.sh [ASSETS=64] [STEPS=512]
set -euo pipefail
cd "$(dirname "$0")/.."
assets=${1:-64} steps=${2:-512}
mpi=(mpirun --oversubscribe -np 2)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe -np 2)
rm -rf data/sensors
/usr/bin/python3 scripts/make_sensor_csv.py --out data/sensors/csv --assets "$assets" \
  --steps "$steps" --channels 6 --seed 3
"${mpi[@]}" build/bin/shardflow-convert --input.format=csv --input.path=data/sensors/csv \
  --preprocess.window=32 --preprocess.stride=8 --preprocess.normalize=standardize \
  --output.path=data/sensors/win --output.shards=4 --log.level=warn
echo "sensor windows in data/sensors/"
