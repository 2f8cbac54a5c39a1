#!/bin/sh
# h5py_interop.sh OUT_DIR PYTHON CHECKER -- MPIEXEC... WRITER
# Runs WRITER under MPIEXEC to write OUT_DIR/interop.h5 (it prints what it wrote), then the
# h5py CHECKER on the file, and fails unless both print the same lines.
set -u
out=$1 python=$2 checker=$3
shift 3
[ "$1" = "--" ] && shift
mkdir -p "$out"
rm -f "$out/interop.h5"
"$@" "$out/interop.h5" > "$out/expected.txt" || { echo "writer failed"; exit 1; }
"$python" "$checker" "$out/interop.h5" > "$out/actual.txt"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -ne 0 ] && { echo "h5py checker failed ($rc)"; exit 1; }
[ -s "$out/expected.txt" ] || { echo "writer printed nothing"; exit 1; }
if diff -u "$out/expected.txt" "$out/actual.txt"; then
  echo "h5py reads what shardflow wrote: $(wc -l < "$out/expected.txt") datasets match"
else
  exit 1
fi
