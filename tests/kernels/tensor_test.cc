#include "kernels/tensor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

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

// A tensor made from a given allocator (a device context's pinned host
// pool) knows it; its buffer is kept only while it comes from that
// allocator, and a plain CPU buffer is not taken for one.
TEST(TensorTest, TryAllocateFromUsesAndKeepsThatAllocatorOnly) {
  std::unique_ptr<Allocator> pool = MakeCachingAllocator(
      Place::CPU(),
      [](size_t size) { return std::aligned_alloc(64, (size + 63) / 64 * 64); },
      [](void* p) { std::free(p); });
  Tensor t;
  EXPECT_EQ(t.allocator(), nullptr);
  ASSERT_TRUE(t.TryAllocateFrom(pool.get(), DType::kFP32, {4, 8}).ok());
  EXPECT_EQ(t.allocator(), pool.get());
  EXPECT_TRUE(t.place().is_cpu());
  EXPECT_EQ(pool->stats().num_allocs, 1u);
  const void* first = t.raw_data();
  ASSERT_TRUE(t.TryAllocateFrom(pool.get(), DType::kFP32, {2, 8}).ok());
  EXPECT_EQ(t.raw_data(), first);
  EXPECT_EQ(pool->stats().num_allocs, 1u);
  // Slices share the buffer, and so its allocator.
  EXPECT_EQ(t.Slice(1, 2).allocator(), pool.get());

  Tensor plain(DType::kFP32, {64});
  EXPECT_EQ(plain.allocator(), GetAllocator(Place::CPU()));
  ASSERT_TRUE(plain.TryAllocateFrom(pool.get(), DType::kFP32, {4}).ok());
  EXPECT_EQ(plain.allocator(), pool.get());
  EXPECT_EQ(pool->stats().num_allocs, 2u);
  // Back on the place's own allocator, a buffer from the pool serves (host
  // memory either way).
  const void* pooled = plain.raw_data();
  plain.Allocate(DType::kFP32, {4});
  EXPECT_EQ(plain.raw_data(), pooled);
  // A copy of a host tensor made there: data, dims and LoD, apart from it.
  Tensor src = MakeTensor<int64_t>({3, 1}, {4, 5, 6});
  src.set_lod({{0, 1, 3}});
  Tensor copy;
  ASSERT_TRUE(copy.TryCopyFrom(pool.get(), src).ok());
  EXPECT_EQ(copy.allocator(), pool.get());
  EXPECT_FALSE(copy.SharesBufferWith(src));
  EXPECT_EQ(ToVector<int64_t>(copy), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(copy.dims(), src.dims());
  EXPECT_EQ(copy.lod(), src.lod());
  // Too large: refused, the tensor unchanged.
  Status big = t.TryAllocateFrom(pool.get(), DType::kFP32, {-1});
  EXPECT_FALSE(big.ok());
  EXPECT_EQ(t.raw_data(), first);
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
