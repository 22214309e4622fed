#include "kernels/cpu/skinny_gemm.h"

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/fused_activation.h"

namespace parex::cpu {

void SkinnyPanels::Pack(int64_t k, int64_t n, bool trans, const float* w) {
  k_ = k;
  n_ = n;
  const int64_t panels = (n + 15) / 16;
  data_.assign(static_cast<size_t>(panels * k * 16), 0.0f);
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = data_.data() + p * k * 16;
    const int64_t cols = std::min<int64_t>(16, n - p * 16);
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t col = p * 16 + c;
        panel[r * 16 + c] = trans ? w[col * k + r] : w[r * n + col];
      }
    }
  }
}

namespace {

constexpr int kPanelsAtOnce = 4;  // the streams read side by side
constexpr int kRowsAtOnce = 4;    // rows x panels accumulators: 16 registers

// tmp[r][16 p + j] = sum over i of x[r, i] * panel p's [i, j], for MR rows
// and P panels: P streams through the panels, each row's x[r, i] broadcast.
template <int MR, int P>
__attribute__((target("avx512f,fma"))) void Tile(int64_t k, const float* x,
                                                 int64_t ldx,
                                                 const float* const* panels,
                                                 float* tmp) {
  __m512 acc[MR][P];
  for (int r = 0; r < MR; ++r) {
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < k; ++i) {
    __m512 w[P];
    for (int p = 0; p < P; ++p) w[p] = _mm512_loadu_ps(panels[p] + i * 16);
    for (int r = 0; r < MR; ++r) {
      const __m512 xr = _mm512_set1_ps(x[r * ldx + i]);
      for (int p = 0; p < P; ++p) {
        acc[r][p] = _mm512_fmadd_ps(xr, w[p], acc[r][p]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int p = 0; p < P; ++p) {
      _mm512_storeu_ps(tmp + r * kPanelsAtOnce * 16 + p * 16, acc[r][p]);
    }
  }
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float* const*,
                        float*);

template <int MR>
TileFn TileFor(int panels) {
  switch (panels) {
    case 1:
      return &Tile<MR, 1>;
    case 2:
      return &Tile<MR, 2>;
    case 3:
      return &Tile<MR, 3>;
    default:
      return &Tile<MR, 4>;
  }
}

TileFn TileFor(int rows, int panels) {
  switch (rows) {
    case 1:
      return TileFor<1>(panels);
    case 2:
      return TileFor<2>(panels);
    case 3:
      return TileFor<3>(panels);
    default:
      return TileFor<4>(panels);
  }
}

// Stores `rows` rows of the tile's columns [col0, col0 + cols) of out
// through the epilogue.
void Store(const float* tmp, int rows, int64_t row0, int64_t col0, int64_t cols,
           int64_t n, const SkinnyEpilogue& e, float* out) {
  for (int r = 0; r < rows; ++r) {
    const int64_t at = (row0 + r) * n + col0;
    for (int64_t j = 0; j < cols; ++j) {
      float v = tmp[r * kPanelsAtOnce * 16 + j];
      if (e.bias != nullptr) v += e.bias[col0 + j];
      if (e.residual != nullptr) v += e.residual[at + j];
      v = ApplyFusedActivation(e.activation, v, e.threshold);
      out[at + j] = v;
    }
  }
}

}  // namespace

bool SkinnyGemmAvailable() {
  static const bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  return avx512;
}

bool SkinnyGemmFaster(int64_t m, int64_t k, int64_t n) {
  // On a thread whose OpenMP team is wider than one, the panels are split
  // over the team (built with OpenMP), or oneDNN's matmul streams through
  // every core (built without).
#if defined(_OPENMP)
  const bool team_ok = true;
#else
  const bool team_ok = IntraOpThreads() <= 1;
#endif
  return team_ok && m <= 16 && k * n >= (int64_t{1} << 18);
}

namespace {

// Panels [4 g, 4 g + 4) of every row.
void PanelGroup(int64_t g, int64_t m, const float* x, const SkinnyPanels& w,
                const SkinnyEpilogue& epilogue, float* out) {
  const int64_t k = w.k(), n = w.n(), panels = (n + 15) / 16;
  const int64_t p0 = g * kPanelsAtOnce;
  alignas(64) float tmp[kRowsAtOnce * kPanelsAtOnce * 16];
  const int group =
      static_cast<int>(std::min<int64_t>(kPanelsAtOnce, panels - p0));
  const float* streams[kPanelsAtOnce];
  for (int p = 0; p < group; ++p) streams[p] = w.panel(p0 + p);
  const int64_t cols = std::min<int64_t>(group * 16, n - p0 * 16);
  // The first rows stream the panels from memory; the rest find them in
  // cache (4 panels of k rows: 256 KiB at k = 1024).
  for (int64_t r0 = 0; r0 < m; r0 += kRowsAtOnce) {
    const int rows = static_cast<int>(std::min<int64_t>(kRowsAtOnce, m - r0));
    TileFor(rows, group)(k, x + r0 * k, k, streams, tmp);
    Store(tmp, rows, r0, p0 * 16, cols, n, epilogue, out);
  }
}

}  // namespace

void SkinnyGemm(int64_t m, const float* x, const SkinnyPanels& w,
                const SkinnyEpilogue& epilogue, float* out) {
  const int64_t panels = (w.n() + 15) / 16;
  const int64_t groups = (panels + kPanelsAtOnce - 1) / kPanelsAtOnce;
#if defined(_OPENMP)
  // The calling thread's team (IntraOpThreads, as oneDNN's calls get):
  // each thread streams its own share of the panel groups.
  UseIntraOpThreads();
  const int team = TeamWidth();
  if (team > 1 && groups > 1) {
#pragma omp parallel for num_threads(team) schedule(static)
    for (int64_t g = 0; g < groups; ++g) {
      PanelGroup(g, m, x, w, epilogue, out);
    }
    return;
  }
#endif
  for (int64_t g = 0; g < groups; ++g) PanelGroup(g, m, x, w, epilogue, out);
}

}  // namespace parex::cpu
