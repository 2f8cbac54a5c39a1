// Winograd F(2x2, 5x5): see winograd.hpp. With the points 0, 1, -1, 2, -2 and infinity:
//
//   B^T = [ 4  0 -5  0  1  0 ]    G = [  1/4     0     0     0     0  ]    A^T = [ 1 1  1 1  1 0 ]
//         [ 0 -4 -4  1  1  0 ]        [ -1/6  -1/6  -1/6  -1/6  -1/6 ]          [ 0 1 -1 2 -2 1 ]
//         [ 0  4 -4 -1  1  0 ]        [ -1/6   1/6  -1/6   1/6  -1/6 ]
//         [ 0 -2 -1  2  1  0 ]        [ 1/24  1/12   1/6   1/3   2/3 ]
//         [ 0  2 -1 -2  1  0 ]        [ 1/24 -1/12   1/6  -1/3   2/3 ]
//         [ 0  4  0 -5  0  1 ]        [    0     0     0     0     1  ]
//
// so that for any 6 inputs d and 5 taps g, A^T [(G g) * (B^T d)] = (sum_k g_k d_{i+k}), i = 0, 1
// (solved exactly, in rationals, for B^T given A^T and G). In two dimensions
// Y = A^T [(G g G^T) * (B^T d B)] A. The 1-D transforms below are those matrices with their
// common terms shared; the 2-D ones apply them to the columns, then to the rows.
//
// Data per image: the image copied into a zero border (rows and columns 2 .. H + 1); then per
// block of up to 64 tiles the transformed patches V [36][tiles][C], the products
// M [36][tiles][F] = V[p] U[p] by 36 calls of cpu::Gemm, and the outputs. Transforms run 8 channels
// at a time in GCC vector-extension code (x86-64-v3's ymm registers), the build's baseline.
#include "core/cpu/winograd.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "core/cpu/gemm.hpp"
#include "core/cpu/gemm_isa.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/cpu/parallel.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::cpu {
namespace {

using V8 = float __attribute__((vector_size(32)));
constexpr int64_t kLanes = 8;
constexpr int kPoints = 36;  // 6 x 6

inline V8 Load(const float* p) {
  V8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void Store(float* p, V8 v) { std::memcpy(p, &v, sizeof(v)); }

// t = B^T d.
inline void InputColumn(const V8 d[6], V8 t[6]) {
  const V8 a = d[4] - 4.0f * d[2], b = d[3] - 4.0f * d[1];
  const V8 c = d[4] - d[2], e = 2.0f * (d[3] - d[1]);
  t[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  t[1] = a + b;
  t[2] = a - b;
  t[3] = c + e;
  t[4] = c - e;
  t[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

// u = G g.
inline void FilterColumn(const V8 g[5], V8 u[6]) {
  const V8 even = g[0] + g[2] + g[4], odd = g[1] + g[3];
  const V8 even2 = g[0] * (1.0f / 24) + g[2] * (1.0f / 6) + g[4] * (2.0f / 3);
  const V8 odd2 = g[1] * (1.0f / 12) + g[3] * (1.0f / 3);
  u[0] = g[0] * 0.25f;
  u[1] = (even + odd) * (-1.0f / 6);
  u[2] = (even - odd) * (-1.0f / 6);
  u[3] = even2 + odd2;
  u[4] = even2 - odd2;
  u[5] = g[4];
}

// y = A^T m.
inline void OutputColumn(const V8 m[6], V8 y[2]) {
  y[0] = m[0] + m[1] + m[2] + m[3] + m[4];
  y[1] = (m[1] - m[2]) + 2.0f * (m[3] - m[4]) + m[5];
}

// The adjoints, for the kernel gradient: m = A y (of Y = A^T M A: dM = A dY A^T) and
// g = G^T s (of U = G g G^T: dg = G^T dU G).
inline void GradColumn(const V8 y[2], V8 m[6]) {
  m[0] = y[0];
  m[1] = y[0] + y[1];
  m[2] = y[0] - y[1];
  m[3] = y[0] + 2.0f * y[1];
  m[4] = y[0] - 2.0f * y[1];
  m[5] = y[1];
}
inline void FilterGradColumn(const V8 s[6], V8 g[5]) {
  const V8 sum12 = s[1] + s[2], diff21 = s[2] - s[1], sum34 = s[3] + s[4], diff34 = s[3] - s[4];
  g[0] = s[0] * 0.25f - sum12 * (1.0f / 6) + sum34 * (1.0f / 24);
  g[1] = diff21 * (1.0f / 6) + diff34 * (1.0f / 12);
  g[2] = (sum34 - sum12) * (1.0f / 6);
  g[3] = diff21 * (1.0f / 6) + diff34 * (1.0f / 3);
  g[4] = sum34 * (2.0f / 3) - sum12 * (1.0f / 6) + s[5];
}

// V[p][tile][c] for one tile: its 6 x 6 patch starts at `patch` (rows `row` floats apart, c
// channels per pixel); point p of channel ch goes to v[p * point_stride + ch].
void InputTile(const float* patch, int64_t row, int64_t c, float* v, int64_t point_stride) {
  for (int64_t ch = 0; ch < c; ch += kLanes) {
    V8 t[6][6];
    for (int j = 0; j < 6; ++j) {
      V8 d[6], col[6];
      for (int i = 0; i < 6; ++i) d[i] = Load(patch + i * row + j * c + ch);
      InputColumn(d, col);
      for (int i = 0; i < 6; ++i) t[i][j] = col[i];
    }
    for (int i = 0; i < 6; ++i) {
      V8 out[6];
      InputColumn(t[i], out);
      for (int j = 0; j < 6; ++j) Store(v + (i * 6 + j) * point_stride + ch, out[j]);
    }
  }
}

// The 2 x 2 outputs of one tile (rows x cols of them inside the image) from its 36 products
// m[p * point_stride + ch], plus the bias; y at `out`, rows `row` floats apart.
void OutputTile(const float* m, int64_t point_stride, int64_t f, const float* bias, float* out,
                int64_t row, int rows, int cols) {
  for (int64_t ch = 0; ch < f; ch += kLanes) {
    V8 t[2][6];
    for (int j = 0; j < 6; ++j) {
      V8 col[6], y[2];
      for (int i = 0; i < 6; ++i) col[i] = Load(m + (i * 6 + j) * point_stride + ch);
      OutputColumn(col, y);
      t[0][j] = y[0];
      t[1][j] = y[1];
    }
    const V8 b = bias != nullptr ? Load(bias + ch) : V8{};
    for (int a = 0; a < rows; ++a) {
      V8 y[2];
      OutputColumn(t[a], y);
      for (int e = 0; e < cols; ++e) Store(out + a * row + e * f + ch, y[e] + b);
    }
  }
}

// dM [36][tiles][f] of one tile = A dY A^T from its 2 x 2 output gradients (rows x cols of
// them inside the image, at `grad`, rows `row` floats apart; the others count as zero).
void GradTile(const float* grad, int64_t row, int64_t f, int rows, int cols, float* m,
              int64_t point_stride) {
  for (int64_t ch = 0; ch < f; ch += kLanes) {
    V8 y[2][2] = {};
    for (int a = 0; a < rows; ++a) {
      for (int e = 0; e < cols; ++e) y[a][e] = Load(grad + a * row + e * f + ch);
    }
    V8 t[6][2];
    for (int e = 0; e < 2; ++e) {
      const V8 col[2] = {y[0][e], y[1][e]};
      V8 out[6];
      GradColumn(col, out);
      for (int i = 0; i < 6; ++i) t[i][e] = out[i];
    }
    for (int i = 0; i < 6; ++i) {
      V8 out[6];
      GradColumn(t[i], out);
      for (int j = 0; j < 6; ++j) Store(m + (i * 6 + j) * point_stride + ch, out[j]);
    }
  }
}

// dw (5, 5, cin, cout) += G^T s G for every channel pair of s [36][cin][cout].
void AddFilterGradient(const float* s, int64_t cin, int64_t cout, float* dw) {
  for (int64_t ci = 0; ci < cin; ++ci) {
    for (int64_t co = 0; co < cout; co += kLanes) {
      V8 t[5][6];  // G^T s: 5 rows of the 6 point columns
      for (int j = 0; j < 6; ++j) {
        V8 col[6], g[5];
        for (int i = 0; i < 6; ++i) col[i] = Load(s + ((i * 6 + j) * cin + ci) * cout + co);
        FilterGradColumn(col, g);
        for (int i = 0; i < 5; ++i) t[i][j] = g[i];
      }
      for (int i = 0; i < 5; ++i) {
        V8 g[5];
        FilterGradColumn(t[i], g);
        for (int j = 0; j < 5; ++j) {
          float* at = dw + ((i * 5 + j) * cin + ci) * cout + co;
          Store(at, Load(at) + g[j]);
        }
      }
    }
  }
}

// u [36][cin][cout] = G g G^T for every channel pair of w (5, 5, cin, cout).
void FilterTransform(const float* w, int64_t cin, int64_t cout, float* u) {
  for (int64_t ci = 0; ci < cin; ++ci) {
    for (int64_t co = 0; co < cout; co += kLanes) {
      V8 t[6][5];  // G g: 6 rows of the 5 kernel columns
      for (int j = 0; j < 5; ++j) {
        V8 g[5], col[6];
        for (int i = 0; i < 5; ++i) g[i] = Load(w + ((i * 5 + j) * cin + ci) * cout + co);
        FilterColumn(g, col);
        for (int i = 0; i < 6; ++i) t[i][j] = col[i];
      }
      for (int i = 0; i < 6; ++i) {
        V8 row[6];
        FilterColumn(t[i], row);
        for (int j = 0; j < 6; ++j) Store(u + ((i * 6 + j) * cin + ci) * cout + co, row[j]);
      }
    }
  }
}

// Tiles of one image: th x tw tiles of 2 x 2 outputs, read from the image inside a border of
// zeros (2 rows and columns before, 2 or 3 after), ph x pw pixels. Tiles are transformed and
// multiplied kTileBlock at a time, so V and M of a block stay in the caches (a block's GEMMs
// ran 240-250 GFLOP/s from 49 rows) and the scratch is bounded whatever the image size.
constexpr int64_t kTileBlock = 64;
struct Tiling {
  int64_t h, w, th, tw, tiles, ph, pw;
  Tiling(int64_t height, int64_t width)
      : h(height),
        w(width),
        th((height + 1) / 2),
        tw((width + 1) / 2),
        tiles(th * tw),
        ph(2 * th + 4),
        pw(2 * tw + 4) {}
  int64_t block() const { return std::min(kTileBlock, tiles); }
};

// The image (H, W, c) into the inside of `padded` (zero-filled by the caller, once).
void PadImage(const Tiling& t, int64_t c, const float* image, float* padded) {
  for (int64_t r = 0; r < t.h; ++r) {
    std::memcpy(padded + ((r + 2) * t.pw + 2) * c, image + r * t.w * c,
                static_cast<size_t>(t.w * c) * sizeof(float));
  }
}

// V [36][t1 - t0][c] of tiles [t0, t1) of a padded image.
void InputTiles(const Tiling& t, int64_t c, const float* padded, int64_t t0, int64_t t1, float* v) {
  for (int64_t k = t0; k < t1; ++k) {
    const int64_t i = k / t.tw, j = k % t.tw;
    InputTile(padded + (2 * i * t.pw + 2 * j) * c, t.pw * c, c, v + (k - t0) * c, (t1 - t0) * c);
  }
}

// The first exception thrown by a piece on the pool, rethrown on the caller afterwards (a
// throw on a worker would end the process): a scratch allocation, or a GEMM's first call.
class PieceErrors {
 public:
  template <typename Fn>
  void Run(const Fn& fn) {
    try {
      fn();
    } catch (...) {
      MutexLock lock(mu_);
      if (error_ == nullptr) error_ = std::current_exception();
    }
  }
  void Rethrow() {
    MutexLock lock(mu_);
    if (error_ != nullptr) std::rethrow_exception(error_);
  }

 private:
  Mutex mu_;
  std::exception_ptr error_ GUARDED_BY(mu_);
};

// Settings read on first use, read here on the caller: a bad one throws here, not on a worker.
void ReadGemmSettings() {
  GemmTarget();
  CurrentGemmKernel();
}

// out (B, H, W, cout) = conv(in (B, H, W, cin), the kernel transformed into u) + bias, for a
// "same" 5 x 5 convolution of stride 1; images split over the intra-op threads.
void Convolve(int64_t h, int64_t w, int64_t cin, int64_t cout, int64_t batch, const float* in,
              const float* u, const float* bias, float* out) {
  const Tiling t(h, w);
  ReadGemmSettings();
  PieceErrors errors;
  ParallelFor(batch, 1, [&](int64_t n0, int64_t n1) {
    errors.Run([&] {
      thread_local std::vector<float> padded, v, m;
      padded.assign(static_cast<size_t>(t.ph * t.pw * cin), 0.0f);
      v.resize(static_cast<size_t>(kPoints * t.block() * cin));
      m.resize(static_cast<size_t>(kPoints * t.block() * cout));
      for (int64_t n = n0; n < n1; ++n) {
        PadImage(t, cin, in + n * h * w * cin, padded.data());
        float* y = out + n * h * w * cout;
        for (int64_t t0 = 0; t0 < t.tiles; t0 += kTileBlock) {
          const int64_t t1 = std::min(t.tiles, t0 + kTileBlock), nb = t1 - t0;
          InputTiles(t, cin, padded.data(), t0, t1, v.data());
          for (int p = 0; p < kPoints; ++p) {
            Gemm<float>(false, false, nb, cout, cin, 1.0f, v.data() + p * nb * cin, cin,
                        u + p * cin * cout, cout, 0.0f, m.data() + p * nb * cout, cout);
          }
          for (int64_t k = t0; k < t1; ++k) {
            const int64_t i = k / t.tw, j = k % t.tw;
            OutputTile(m.data() + (k - t0) * cout, nb * cout, cout, bias,
                       y + (2 * i * w + 2 * j) * cout, w * cout,
                       static_cast<int>(std::min<int64_t>(2, h - 2 * i)),
                       static_cast<int>(std::min<int64_t>(2, w - 2 * j)));
          }
        }
      }
    });
  });
  errors.Rethrow();
}

}  // namespace

bool WinogradApplies(const ConvGeometry& g, int64_t f) {
  return g.kh == 5 && g.kw == 5 && g.stride == 1 && g.pad_top == 2 && g.pad_left == 2 &&
         g.oh == g.h && g.ow == g.w && g.h > 0 && g.w > 0 && g.c > 0 && f > 0 &&
         g.c % kLanes == 0 && f % kLanes == 0;
}

bool WinogradTakes(const ConvGeometry& g, int64_t f, int64_t batch) {
  const ConvKernel kernel = CurrentConvKernel();
  return (kernel == ConvKernel::kAuto || kernel == ConvKernel::kWinograd) &&
         batch >= kWinogradMinBatch && WinogradApplies(g, f);
}

void WinogradConvForward(const ConvGeometry& g, int64_t f, int64_t batch, const float* x,
                         const float* w, const float* bias, float* y) {
  thread_local std::vector<float> u;
  u.resize(static_cast<size_t>(kPoints * g.c * f));
  FilterTransform(w, g.c, f, u.data());
  Convolve(g.h, g.w, g.c, f, batch, x, u.data(), bias, y);
}

void WinogradConvBackwardData(const ConvGeometry& g, int64_t f, int64_t batch, const float* dy,
                              const float* w, float* dx) {
  // dx = conv(dy, w') with w'(i, j, f, c) = w(4 - i, 4 - j, c, f): a "same" convolution again.
  thread_local std::vector<float> turned, u;
  turned.resize(static_cast<size_t>(25 * g.c * f));
  for (int64_t i = 0; i < 25; ++i) {
    const float* from = w + (24 - i) * g.c * f;
    float* to = turned.data() + i * f * g.c;
    for (int64_t c = 0; c < g.c; ++c) {
      for (int64_t k = 0; k < f; ++k) to[k * g.c + c] = from[c * f + k];
    }
  }
  u.resize(static_cast<size_t>(kPoints * g.c * f));
  FilterTransform(turned.data(), f, g.c, u.data());
  Convolve(g.h, g.w, f, g.c, batch, dy, u.data(), nullptr, dx);
}

void WinogradConvBackwardFilter(const ConvGeometry& g, int64_t f, int64_t batch, const float* x,
                                const float* dy, float* dw) {
  if (batch <= 0) return;
  const int64_t h = g.h, w = g.w, c = g.c;
  const Tiling t(h, w);
  const int64_t pieces = (batch + kWinogradImagesPerPiece - 1) / kWinogradImagesPerPiece;
  const int64_t per_piece = kPoints * c * f;
  // Each piece's S [36][c][f], written by its first GEMM (no zero fill).
  const std::unique_ptr<float[]> sums(new float[static_cast<size_t>(pieces * per_piece)]);
  ReadGemmSettings();
  PieceErrors errors;
  RunPieces(pieces, [&](int64_t p) {
    errors.Run([&] {
      thread_local std::vector<float> padded, v, m;
      padded.assign(static_cast<size_t>(t.ph * t.pw * c), 0.0f);
      v.resize(static_cast<size_t>(kPoints * t.block() * c));
      m.resize(static_cast<size_t>(kPoints * t.block() * f));
      float* s = sums.get() + p * per_piece;
      const int64_t n0 = p * kWinogradImagesPerPiece;
      const int64_t n1 = std::min(batch, n0 + kWinogradImagesPerPiece);
      for (int64_t n = n0; n < n1; ++n) {
        PadImage(t, c, x + n * h * w * c, padded.data());
        const float* grad = dy + n * h * w * f;
        for (int64_t t0 = 0; t0 < t.tiles; t0 += kTileBlock) {
          const int64_t t1 = std::min(t.tiles, t0 + kTileBlock), nb = t1 - t0;
          InputTiles(t, c, padded.data(), t0, t1, v.data());
          for (int64_t k = t0; k < t1; ++k) {
            const int64_t i = k / t.tw, j = k % t.tw;
            GradTile(grad + (2 * i * w + 2 * j) * f, w * f, f,
                     static_cast<int>(std::min<int64_t>(2, h - 2 * i)),
                     static_cast<int>(std::min<int64_t>(2, w - 2 * j)), m.data() + (k - t0) * f,
                     nb * f);
          }
          // S[point] (c x f) += V[point]^T dM[point] over the block's tiles.
          const float beta = n == n0 && t0 == 0 ? 0.0f : 1.0f;
          for (int q = 0; q < kPoints; ++q) {
            Gemm<float>(true, false, c, f, nb, 1.0f, v.data() + q * nb * c, c,
                        m.data() + q * nb * f, f, beta, s + q * c * f, f);
          }
        }
      }
    });
  });
  errors.Rethrow();
  // The pieces summed in piece order for every element (bits independent of the threads).
  float* total = sums.get();
  ParallelFor(per_piece, 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t p = 1; p < pieces; ++p) {
      const float* from = total + p * per_piece;
      for (int64_t i = i0; i < i1; ++i) total[i] += from[i];
    }
  });
  AddFilterGradient(total, c, f, dw);
}

}  // namespace shardflow::cpu
