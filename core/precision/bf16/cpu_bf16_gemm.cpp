#include "core/precision/bf16/cpu_bf16_gemm.hpp"

#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "core/error.hpp"

#if defined(SHARDFLOW_HAVE_ONEDNN)
#include <oneapi/dnnl/dnnl.hpp>

#include "core/cpu/build_once.hpp"
#include "core/cpu/onednn_thread.hpp"
#include "core/cpu/parallel.hpp"
#endif

namespace shardflow::bf16 {

#if defined(SHARDFLOW_HAVE_ONEDNN)
namespace {

using dnnl::memory;

// A cached product of one piece: its primitive and the scratch memory it asks for.
struct Prim {
  dnnl::matmul prim;
  memory::desc a, b, c;
  size_t scratch = 0;
  std::string impl;
};

// trans_a, trans_b, m, piece width, k, row stride of packed B, ldc, alpha and beta bits.
using Key = std::array<int64_t, 9>;

std::shared_ptr<Prim> Build(const Key& key, float alpha, float beta) {
  const bool ta = key[0] != 0, tb = key[1] != 0;
  const int64_t m = key[2], w = key[3], k = key[4], ldb = key[5], ldc = key[6];
  auto p = std::make_shared<Prim>();
  const auto bf = memory::data_type::bf16;
  // A is packed as stored: (M, K) row-major, or (K, M) when transposed.
  p->a = memory::desc({m, k}, bf, ta ? memory::dims{1, m} : memory::dims{k, 1});
  // B's piece: columns [j0, j0 + w) of op(B) (K, N) inside packed B of row stride ldb.
  p->b = memory::desc({k, w}, bf, tb ? memory::dims{1, ldb} : memory::dims{ldb, 1});
  p->c = memory::desc({m, w}, memory::data_type::f32, memory::dims{ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p->a, p->b, p->c), attr,
                                        cpu::OneDnnEngine());
  p->prim = dnnl::matmul(pd);
  p->scratch = pd.scratchpad_desc().get_size();
  p->impl = pd.impl_info_str();
  return p;
}

using Cache = cpu::BuildOnce<Key, Prim>;

Cache& Prims() {
  static Cache* cache = new Cache();  // never destroyed: pool threads may outlive statics
  return *cache;
}

int64_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

bool Native(dnnl::cpu_isa isa) {
  const auto bits = static_cast<unsigned>(isa);
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (bits & bf16) == bf16;
}

const char* IsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    default:
      return "older than avx2";
  }
}

}  // namespace

std::string CpuUnsupported() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  if (Native(isa)) return "";
  return std::string(
             "this CPU has neither AVX512-BF16 nor AMX-BF16 (oneDNN's best instruction "
             "set here: ") +
         IsaName(isa) + ")";
}

bool CpuHasMatrixUnits() {
  const auto bits = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto amx = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_amx);
  return (bits & amx) == amx;
}

std::string CpuKernelName() {
  if (!CpuUnsupported().empty()) return "";
  const Key key{0, 0, 64, 64, 64, 64, 64, Bits(1.0f), Bits(0.0f)};
  return Prims().Get(key, [&] { return Build(key, 1.0f, 0.0f); })->impl;
}

void CpuGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // no products: C = beta C, and beta = 0 overwrites whatever C held
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  // The ISA cannot change while the process runs: asked once, not on every product.
  static const bool native = CpuUnsupported().empty();
  if (!native) throw Error(ErrorCode::kInvalidArgument, "bf16 products: " + CpuUnsupported());
  // Packed bf16 copies, as stored: A (M, K) or (K, M); B (K, N) or (N, K).
  std::vector<uint16_t> pa(static_cast<size_t>(m * k)), pb(static_cast<size_t>(k * n));
  RoundRows(a, trans_a ? k : m, trans_a ? m : k, lda, pa.data());
  RoundRows(b, trans_b ? n : k, trans_b ? k : n, ldb, pb.data());
  const int64_t packed_ldb = trans_b ? k : n;
  const int64_t pieces = (n + kBf16GemmColumns - 1) / kBf16GemmColumns;
  const int64_t last = n - (pieces - 1) * kBf16GemmColumns;
  auto key_of = [&](int64_t w) {
    return Key{trans_a ? 1 : 0, trans_b ? 1 : 0, m, w, k, packed_ldb, ldc, Bits(alpha), Bits(beta)};
  };
  std::shared_ptr<const Prim> full, tail;
  try {
    const Key full_key = key_of(pieces > 1 ? kBf16GemmColumns : last), tail_key = key_of(last);
    full = Prims().Get(full_key, [&] { return Build(full_key, alpha, beta); });
    tail = Prims().Get(tail_key, [&] { return Build(tail_key, alpha, beta); });
  } catch (const dnnl::error& e) {
    throw Error(ErrorCode::kInternal, std::string("oneDNN has no bf16 matmul for ") +
                                          std::to_string(m) + " x " + std::to_string(n) + " x " +
                                          std::to_string(k) + ": " + e.what());
  }
  std::atomic<bool> failed{false};  // a pool worker must not throw: the caller does
  cpu::RunPieces(pieces, [&](int64_t i) {
    const Prim& p = i + 1 < pieces ? *full : *tail;
    const int64_t j0 = i * kBf16GemmColumns;
    cpu::OneDnnThread& t = cpu::ThisOneDnnThread();
    try {
      dnnl::engine& eng = cpu::OneDnnEngine();
      memory ma(p.a, eng, pa.data());
      memory mb(p.b, eng, pb.data() + (trans_b ? j0 * k : j0));
      memory mc(p.c, eng, c + j0);
      memory ms(dnnl::memory::desc({static_cast<int64_t>(p.scratch)}, memory::data_type::u8,
                                   memory::format_tag::a),
                eng, t.Bytes(p.scratch));
      p.prim.execute(t.Stream(), {{DNNL_ARG_SRC, ma},
                                  {DNNL_ARG_WEIGHTS, mb},
                                  {DNNL_ARG_DST, mc},
                                  {DNNL_ARG_SCRATCHPAD, ms}});
      t.Stream().wait();
    } catch (const dnnl::error&) {
      failed.store(true);
    }
  });
  if (failed.load()) {
    throw Error(ErrorCode::kInternal, "oneDNN's bf16 matmul failed on " + std::to_string(m) +
                                          " x " + std::to_string(n) + " x " + std::to_string(k));
  }
}

#else  // no oneDNN in this build (the ThreadSanitizer build)

std::string CpuUnsupported() { return "this build has no oneDNN (SHARDFLOW_ONEDNN=OFF)"; }
bool CpuHasMatrixUnits() { return false; }
std::string CpuKernelName() { return ""; }
void CpuGemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
             int64_t, float, float*, int64_t) {
  throw Error(ErrorCode::kInvalidArgument, "bf16 products: " + CpuUnsupported());
}

#endif

}  // namespace shardflow::bf16
