#!/usr/bin/env bash
# Lint: every collective and point-to-point wait goes through comm/ (watchdog, tracing, size_t
# counts), so no C++ source of apps/, io/ or core/ names an MPI identifier, in code or in a
# comment, except the three places that own MPI: comm/ (not scanned), core/mpi_env.* (the
# bootstrap) and io/hdf5/file.* (the MPI-IO file layer). Fails listing every offending line.
#   tests/comm/no_raw_mpi_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: no_raw_mpi_test.sh SOURCE_DIR}
cd "$src"

# The C and C++ sources of the scanned folders: tracked files in a git checkout, else all.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard -- apps io core)
else
  files=$(find apps io core -type f | sort)
fi
files=$(printf '%s\n' "$files" | grep -E '\.(cpp|hpp|cc|h|cu|cuh)$' |
  grep -vE '^(core/mpi_env|io/hdf5/file)\.[a-z]+$' || true)
if [ -z "$files" ]; then
  echo "no_raw_mpi: no sources found under $src (apps, io, core)" >&2
  exit 1
fi

offenders=$(printf '%s\n' "$files" | xargs -d '\n' grep -nE 'MPI_[A-Za-z]' -- || true)
if [ -n "$offenders" ]; then
  count=$(printf '%s\n' "$offenders" | wc -l)
  echo "no_raw_mpi: $count line(s) name MPI outside comm/, core/mpi_env.* and io/hdf5/file.*;" \
       "use comm/ (comm::Communicator, comm/collectives.hpp) instead:" >&2
  printf '%s\n' "$offenders" >&2
  exit 1
fi
echo "no_raw_mpi: $(printf '%s\n' "$files" | wc -l) sources checked, none names MPI"
