#!/usr/bin/env bash
# The steps of ./run.sh after the build, on the embedded default data (Fashion-MNIST from the
# Debian package dataset-fashion-mnist):
#   1. shardflow-convert, 2 ranks: IDX -> TFRecord shards in data/ (skipped when present)
#   2. shardflow-train, 2 ranks, data-parallel: configs/fmnist_mlp.ini -> runs/fmnist_mlp/
#      (evaluates on the test set every epoch; prints accuracy, throughput and where the time
#      went)
#   3. shardflow-predict, 2 ranks: every test record's id, class and probabilities ->
#      runs/fmnist_mlp/predictions.h5
# Extra arguments go to shardflow-train (e.g. --train.epochs=3).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin
mpi=(mpirun --oversubscribe -np 2)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe -np 2)
export OMPI_MCA_mpi_yield_when_idle=1

if [ ! -f data/fmnist-train.meta.json ] || [ ! -f data/fmnist-test.meta.json ]; then
  echo "== 1/3 convert Fashion-MNIST (IDX from /usr/share/datasets/fashion-mnist) to TFRecord shards, 2 ranks"
  "${mpi[@]}" "$bin/shardflow-convert" --input.format=idx --input.split=train \
    --output.path=data/fmnist-train --output.shards=8 --log.level=warn
  "${mpi[@]}" "$bin/shardflow-convert" --input.format=idx --input.split=test \
    --output.path=data/fmnist-test --output.shards=2 --log.level=warn
  "$bin/shardflow-inspect" verify data/fmnist-train-*-of-*.tfrecord data/fmnist-test-*-of-*.tfrecord
else
  echo "== 1/3 TFRecord shards already in data/ (delete data/ to convert again)"
fi

echo "== 2/3 train the MLP data-parallel on 2 ranks (configs/fmnist_mlp.ini)"
# Ctrl-C stops after the current step with a checkpoint (scripts/keep_work.sh); ./run.sh
# --resume continues.
scripts/keep_work.sh "${mpi[@]}" "$bin/shardflow-train" --config configs/fmnist_mlp.ini \
  --output runs/fmnist_mlp "$@"

echo "== 3/3 predict the test set on 2 ranks with the trained model"
"${mpi[@]}" "$bin/shardflow-predict" --config configs/fmnist_mlp.ini \
  --checkpoint runs/fmnist_mlp/checkpoints --input 'data/fmnist-test-*-of-*.tfrecord' \
  --output runs/fmnist_mlp/predictions.h5 --log.level=warn
