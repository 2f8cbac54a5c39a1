#!/usr/bin/env bash
# The AVX-512 code (core/cpu/gemm_avx512.cpp, Eigen's GEMM block, and core/cpu/sgemm_avx512.cpp,
# shardflow's own kernel; both built with -march=x86-64-v4) must define no weak symbol the rest
# of the program could share: the linker keeps one copy of each weak symbol for the whole
# program, so an inline function or template compiled there with AVX-512 instructions (Eigen's,
# or the standard library's) could replace the x86-64-v3 copy everywhere and crash a CPU
# without AVX-512. Allowed: their own explicit instantiations, the renamed Eigen (EigenAvx512::)
# and the v4 namespace.
#   gemm_avx512_symbols.sh LIBSHARDFLOW_CORE.a
set -euo pipefail
lib=$1
total=0
for object in gemm_avx512.cpp.o sgemm_avx512.cpp.o; do
  listing=$(nm -C "$lib" 2>/dev/null | awk -v o="$object:" '$0 == o {on = 1; next} /\.o:$/ {on = 0} on')
  if [ -z "$listing" ]; then
    echo "gemm_avx512_symbols: no $object in $lib" >&2
    exit 1
  fi
  weak=$(printf '%s\n' "$listing" | awk '$2 ~ /^[WVu]$/' |
    grep -v -e 'shardflow::cpu::GemmBlockAvx512<' -e 'EigenAvx512::' -e 'shardflow::cpu::v4::' \
      -e 'DW\.ref\.__gxx_personality_v0' || true)
  if [ -n "$weak" ]; then
    echo "gemm_avx512_symbols: weak symbols in $object the x86-64-v3 code could share:" >&2
    printf '%s\n' "$weak" >&2
    exit 1
  fi
  total=$((total + $(printf '%s\n' "$listing" | awk '$2 ~ /^[WVu]$/' | wc -l)))
done
echo "gemm_avx512_symbols: $total weak symbols, all in the AVX-512 code's own namespaces"
