#!/usr/bin/env bash
# Installs the Debian packages shardflow needs. Idempotent and quiet when everything is there.
# As root: installs what is missing. Otherwise: prints the apt-get line and exits 1.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  openmpi-bin libopenmpi-dev libhdf5-openmpi-dev libeigen3-dev
  libboost-program-options-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libprotobuf-dev protobuf-compiler libjpeg62-turbo-dev libpng-dev libsimdjson-dev
  libcpp-httplib-dev
  libsimgrid-dev libdnnl-dev
  slurm-wlm munge gnuplot-nox
  clang libclang-rt-14-dev clang-format
  dataset-fashion-mnist fortunes python3-h5py python3-numpy python3-venv
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "shardflow needs these Debian packages. Install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
