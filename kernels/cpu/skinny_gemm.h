// Products of a few rows by a large constant matrix: an inference program's
// 1x1 convolutions and fc at batch 1 (MobileNet's 1024->1024 on a 2x2 plane
// is [4, 1024] x [1024, 1024]). There the arithmetic is nothing and the run
// is the time to stream the matrix from memory, which one sequential stream
// does at about two thirds of what a core can pull through several
// (measured here: 4 MiB from memory in 280 us as one stream, 175-190 us as
// four). oneDNN's matmul reads its blocked weights as one stream (4 MiB in
// 300-340 us, the same as plain reads), so parex writes this one by hand:
// the matrix packed into 16-column panels, four panels read side by side.
// Where the matrix fits in cache or the rows are many, oneDNN stays faster
// (SkinnyGemmFaster says where, from kernel_bench's measurements).
#pragma once

#include <cstdint>
#include <vector>

namespace parex::cpu {

// A [k, n] matrix packed for SkinnyGemm: ceil(n / 16) panels, each its k
// rows of 16 columns (the last panel's missing columns zero).
class SkinnyPanels {
 public:
  // Packs `w`: [k, n] row-major, or (`trans`) [n, k] row-major read as its
  // transpose (an OIHW 1x1 filter, an fc's y^T).
  void Pack(int64_t k, int64_t n, bool trans, const float* w);
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  const float* panel(int64_t p) const { return data_.data() + p * k_ * 16; }

 private:
  int64_t k_ = 0, n_ = 0;
  std::vector<float> data_;
};

// What SkinnyGemm adds to each product before storing it: a bias per column,
// a residual of the output's shape, then an activation (0 none, 1 relu, 2
// relu6 clipping at `threshold`, 3 leaky_relu of slope `threshold`, 4
// hard_swish), as the fused convolutions' epilogue.
struct SkinnyEpilogue {
  const float* bias = nullptr;
  const float* residual = nullptr;  // [m, n]; may be `out` itself
  int activation = 0;
  float threshold = 6.0f;
};

// Whether this CPU runs SkinnyGemm (AVX-512).
bool SkinnyGemmAvailable();

// Whether [m, k] x [k, n] by a constant matrix is faster through SkinnyGemm
// than through oneDNN's matmul with its weights packed once (on a thread
// whose OpenMP team is wider than one only where the build has OpenMP:
// there SkinnyGemm splits the panels over the team).
bool SkinnyGemmFaster(int64_t m, int64_t k, int64_t n);

// out[m, n] = epilogue(x[m, k] * W) for W packed in `w`; x and out
// row-major with row strides k and n. Only where SkinnyGemmAvailable().
void SkinnyGemm(int64_t m, const float* x, const SkinnyPanels& w,
                const SkinnyEpilogue& epilogue, float* out);

}  // namespace parex::cpu
