#include "kernels/tensor.h"

#include <gtest/gtest.h>

#include "kernels/allocator.h"

namespace parex {
namespace {

TEST(TensorTest, ShapeTypeAndData) {
  Tensor t = MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.bytes(), 24u);
  EXPECT_EQ(t.dtype(), DType::kFP32);
  EXPECT_EQ(t.DebugString(), "fp32[2,3]@cpu:0");
  EXPECT_EQ(t.data<float>()[4], 5);
  t.Reshape({3, 2});
  EXPECT_EQ(t.dims(), (Dims{3, 2}));
}

TEST(TensorTest, SliceSharesCloneCopies) {
  Tensor t = MakeTensor<int64_t>({3, 2}, {0, 1, 2, 3, 4, 5});
  Tensor rows = t.Slice(1, 3);
  EXPECT_EQ(rows.dims(), (Dims{2, 2}));
  EXPECT_EQ(ToVector<int64_t>(rows), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_TRUE(rows.SharesBufferWith(t));
  rows.data<int64_t>()[0] = 20;
  EXPECT_EQ(t.data<int64_t>()[2], 20);
  Tensor copy = t.Clone();
  EXPECT_FALSE(copy.SharesBufferWith(t));
  copy.data<int64_t>()[0] = 99;
  EXPECT_EQ(t.data<int64_t>()[0], 0);
}

TEST(TensorTest, AllocateKeepsALargeEnoughBuffer) {
  Tensor t(DType::kFP32, {100});
  const void* before = t.raw_data();
  t.data<float>()[0] = 7;
  t.Allocate(DType::kFP32, {10, 10});
  EXPECT_EQ(t.raw_data(), before);
  EXPECT_EQ(t.data<float>()[0], 7);  // in-place ops keep their input
  t.Allocate(DType::kFP64, {50});
  EXPECT_EQ(t.raw_data(), before);
  t.Allocate(DType::kFP64, {51});
  EXPECT_NE(t.raw_data(), before);
}

TEST(TensorTest, ZeroSizedTensors) {
  Tensor t(DType::kFP32, {0, 5});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_TRUE(t.initialized());
  EXPECT_EQ(t.Clone().numel(), 0);
}

TEST(TensorTest, TryAllocateRefusesWhatCannotBeHad) {
  Tensor t(DType::kFP32, {2, 3});
  // A shape whose byte size overflows, a negative extent, more than the
  // allocator's limit: errors naming dims and place, the tensor unchanged.
  for (const Dims& dims : {Dims{int64_t{1} << 32, int64_t{1} << 32},
                           Dims{-1, 4}, Dims{int64_t{1} << 47, 4}}) {
    Status s = t.TryAllocate(DType::kFP32, dims, Place::CPU(1));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(DimsToString(dims)), std::string::npos)
        << s.message();
    EXPECT_EQ(t.dims(), (Dims{2, 3}));
  }
  const size_t limit = AllocationLimit();
  SetAllocationLimitForTesting(1 << 20);
  Status s = t.TryAllocate(DType::kFP32, {1024, 1024}, Place::CPU(1));  // 4 MiB
  SetAllocationLimitForTesting(limit);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("cpu:1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("4194304 bytes"), std::string::npos)
      << s.message();
  EXPECT_TRUE(t.TryAllocate(DType::kFP32, {1024, 1024}, Place::CPU(1)).ok());
}

TEST(TensorDeathTest, WrongTypeAccessAborts) {
  Tensor t(DType::kFP32, {2});
  EXPECT_DEATH(t.data<double>(), "fp32, accessed as fp64");
}

}  // namespace
}  // namespace parex
