#!/usr/bin/env bash
# interop_check.sh WRITER VENV_DIR WORK_DIR: files written by shardflow (plain, gzip, zlib; 0, 1
# and 1000 records) must be read by the independent PyPI `tfrecord` package with the same
# totals. The virtual environment is created on first use; if the package index cannot be
# reached the test is skipped (exit 77) with a loud message.
set -u
writer=$1 venv=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import tfrecord, google.protobuf" 2>/dev/null; then
  rm -rf "$venv"
  if ! /usr/bin/python3 -m venv "$venv"; then
    echo "SKIPPED: cannot create a virtual environment (apt-get install python3-venv)"; exit 77
  fi
  if ! timeout 300 "$venv/bin/pip" install --quiet --disable-pip-version-check tfrecord protobuf; then
    echo "****************************************************************"
    echo "SKIPPED: pip could not install 'tfrecord protobuf' from the Python package index;"
    echo "the interop check with an independent TFRecord reader did NOT run."
    echo "****************************************************************"
    exit 77
  fi
fi
# The package's generated example_pb2 predates protobuf 4; the pure-Python runtime reads it.
export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python
mkdir -p "$work"
fail=0
for n in 0 1 1000; do
  for c in none gzip zlib; do
    f="$work/interop-$n.$c.tfrecord"
    want=$("$writer" "$f" "$n" "$c") || { echo "writer failed for $f"; exit 1; }
    got=$("$venv/bin/python" "$here/tfrecord_check.py" "$f" "$c") || { echo "reader failed for $f"; fail=1; continue; }
    if [ "$want" = "$got" ]; then
      echo "ok   $f: $got"
    else
      echo "FAIL $f: shardflow wrote [$want], tfrecord read [$got]"; fail=1
    fi
  done
done
exit $fail
