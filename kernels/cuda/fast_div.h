// Division by a divisor fixed before a launch, for the index arithmetic of
// element-wise device kernels, where 32-bit `/` and `%` (tens of
// instructions each) were most of im2col's time. For d >= 1 and dividends
// n < 2^31: with s = ceil(log2 d) and m = floor(2^32 (2^s - d) / d) + 1,
// n / d = (umulhi(n, m) + n) >> s (the round-up multiplier method,
// Granlund and Montgomery 1994; Hacker's Delight 10-9). Host and device
// code; checked against `/` on the host (fast_div_test.cc).
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define PAREX_HOST_DEVICE __host__ __device__
#else
#define PAREX_HOST_DEVICE
#endif

namespace parex {

class FastDiv {
 public:
  FastDiv() = default;
  // REQUIRES: 1 <= divisor < 2^31.
  explicit FastDiv(uint32_t divisor) : d_(divisor) {
    while ((uint64_t{1} << s_) < d_) ++s_;
    m_ = static_cast<uint32_t>(
        ((uint64_t{1} << 32) * ((uint64_t{1} << s_) - d_)) / d_ + 1);
  }

  // REQUIRES: n < 2^31.
  PAREX_HOST_DEVICE uint32_t Div(uint32_t n) const {
#ifdef __CUDA_ARCH__
    const uint32_t hi = __umulhi(n, m_);
#else
    const uint32_t hi =
        static_cast<uint32_t>((static_cast<uint64_t>(n) * m_) >> 32);
#endif
    return (hi + n) >> s_;
  }
  PAREX_HOST_DEVICE uint32_t divisor() const { return d_; }

 private:
  uint32_t d_ = 1, m_ = 1, s_ = 0;
};

}  // namespace parex
