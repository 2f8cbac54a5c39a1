#!/usr/bin/env bash
# Process-level tests of shardflow-convert's pipeline-source inputs (text | jsonl | images |
# fixed) under mpiexec: byte-identical shards for np 1 and 3, and every record (by id) equal to
# what convert_sources_data.py says the inputs hold.
#   convert_sources_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"
data="$py $here/convert_sources_data.py"
$data make "$mode" in

convert() {  # convert NP ARGS...
  local np=$1
  shift
  "${mpi[@]}" -np "$np" "$bin/shardflow-convert" "$@" >"convert.np$np.log" 2>&1 ||
    { echo "shardflow-convert -np $np $* failed:"; cat "convert.np$np.log"; exit 1; }
}

case "$mode" in
text) args=(--input.format=text "--input.files=in/*.txt*" --output.path=NP/txt) ;;
jsonl) args=(--input.format=jsonl "--input.files=in/*.jsonl" --input.on_error=skip
  "--input.schema=key:int64,score:float32,text:bytes,emb:float32[2]" --output.path=NP/js) ;;
images) args=(--input.format=images --input.root=in --input.on_error=skip --output.path=NP/img) ;;
images_decoded) args=(--input.format=images --input.root=in --input.on_error=skip
  --input.image_bytes=decoded --output.path=NP/img) ;;
fixed) args=(--input.format=fixed "--input.files=in/*.bin" --input.record_bytes=3073
  --input.header_bytes=4 --output.path=NP/fx) ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
for np in 1 3; do
  convert $np "${args[@]/NP/np$np}" --output.shards=4
done
diff <(cd np1 && ls) <(cd np3 && ls) || { echo "file lists differ"; exit 1; }
for f in np1/*.tfrecord; do cmp "$f" "np3/$(basename "$f")"; done
"$bin/shardflow-inspect" verify np1/*.tfrecord >/dev/null
"$bin/shardflow-inspect" cat np1/*.tfrecord >cat.jsonl
$data check "$mode" in cat.jsonl
case "$mode" in  # the one bad line / corrupt image is reported once, by rank 0
jsonl) grep -q "skipped 1 bad lines (input.on_error=skip)" convert.np3.log ;;
images*) grep -q "skipped 1 bad images (input.on_error=skip)" convert.np3.log ;;
esac
echo "convert_sources_runs.sh $mode: ok"
