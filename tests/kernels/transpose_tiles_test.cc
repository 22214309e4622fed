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

// Permutations that are no batched 2-D transpose take the general walk,
// with runs of dims that move together merged: ShuffleNet's channel shuffle
// (the last two dims stay last: copied whole) and one whose last dim moves
// (strided), both against index arithmetic written here.
TEST(Transpose2KernelTest, MergedRunsMatchIndexArithmetic) {
  const Dims in = {2, 3, 4, 5, 6};
  const std::vector<std::vector<int>> perms = {{0, 2, 1, 3, 4},
                                               {3, 4, 0, 2, 1}};
  for (const std::vector<int>& axis : perms) {
    OpTester t("transpose2");
    t.Input("X", Iota<float>(in)).Output("Out").Attr("axis", axis);
    ASSERT_TRUE(t.Run().ok());
    Dims out_dims(5);
    for (int d = 0; d < 5; ++d) out_dims[d] = in[axis[d]];
    ASSERT_EQ(t.Out("Out").dims(), out_dims);
    const float* out = t.Out("Out").data<float>();
    int64_t o = 0;
    int64_t i[5];
    for (i[0] = 0; i[0] < out_dims[0]; ++i[0])
      for (i[1] = 0; i[1] < out_dims[1]; ++i[1])
        for (i[2] = 0; i[2] < out_dims[2]; ++i[2])
          for (i[3] = 0; i[3] < out_dims[3]; ++i[3])
            for (i[4] = 0; i[4] < out_dims[4]; ++i[4], ++o) {
              int64_t j[5];
              for (int d = 0; d < 5; ++d) j[axis[d]] = i[d];
              const int64_t from =
                  (((j[0] * in[1] + j[1]) * in[2] + j[2]) * in[3] + j[3]) *
                      in[4] +
                  j[4];
              ASSERT_EQ(out[o], static_cast<float>(from)) << "output " << o;
            }
  }
}

}  // namespace
}  // namespace parex::testing
