// transpose2's batched 2-D path (kernels/cpu/shape_kernels.cc: a
// permutation that merges to [B, R, C] -> [B, C, R] moves 16x16 tiles):
// NCHW <-> NHWC on extents beyond one tile and not multiples of it, against
// index arithmetic written here.
#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

template <typename T>
Tensor Iota(const Dims& dims) {
  Tensor t(DTypeOf<T>(), dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(i);
  return t;
}

TEST(Transpose2KernelTest, ChannelsLastBothWaysAcrossTiles) {
  const int64_t n = 3, c = 40, h = 5, w = 7;
  OpTester t("transpose2");
  t.Input("X", Iota<float>({n, c, h, w}))
      .Output("Out")
      .Attr("axis", std::vector<int>{0, 2, 3, 1});
  ASSERT_TRUE(t.Run().ok());
  ASSERT_EQ(t.Out("Out").dims(), (Dims{n, h, w, c}));
  const float* nhwc = t.Out("Out").data<float>();
  for (int64_t a = 0; a < n; ++a)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t k = 0; k < c; ++k)
          ASSERT_EQ(nhwc[((a * h + y) * w + x) * c + k],
                    static_cast<float>(((a * c + k) * h + y) * w + x));
  OpTester back("transpose2");
  back.Input("X", t.Out("Out"))
      .Output("Out")
      .Attr("axis", std::vector<int>{0, 3, 1, 2});
  ASSERT_TRUE(back.Run().ok());
  EXPECT_EQ(ToVector<float>(back.Out("Out")),
            ToVector<float>(Iota<float>({n, c, h, w})));
}

}  // namespace
}  // namespace parex::testing
