// FastDiv (kernels/cuda/fast_div.h), the index division of the CUDA
// kernels, against `/` on the host: every divisor up to 4096 and a spread
// of larger ones, with dividends at the edges (0, multiples and their
// neighbours, 2^31 - 1) and at random below 2^31.
#include "kernels/cuda/fast_div.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace parex {
namespace {

TEST(FastDivTest, AgreesWithDivisionBelow2To31) {
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 4096; ++d) divisors.push_back(d);
  std::mt19937 rng(29);
  for (int k = 0; k < 2000; ++k) divisors.push_back(1 + rng() % 0x7ffffffe);
  for (uint32_t shift = 12; shift < 31; ++shift) {
    for (uint32_t delta : {0u, 1u}) {
      divisors.push_back((1u << shift) - delta);
      divisors.push_back((1u << shift) + delta);
    }
  }
  const uint32_t top = 0x7fffffffu;
  for (uint32_t d : divisors) {
    const FastDiv f(d);
    ASSERT_EQ(f.divisor(), d);
    std::vector<uint32_t> ns = {
        0, 1, d - 1, d, d + 1, top, top - 1, top / d * d, top / d * d - 1};
    for (int k = 0; k < 200; ++k) ns.push_back(rng() & top);
    for (uint32_t n : ns) {
      if (n > top) continue;
      ASSERT_EQ(f.Div(n), n / d) << n << " / " << d;
    }
  }
}

}  // namespace
}  // namespace parex
