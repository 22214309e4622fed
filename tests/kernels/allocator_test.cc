#include "kernels/allocator.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/tensor.h"

namespace parex {
namespace {

TEST(AllocatorTest, AlignedAndReusesFreedBlocks) {
  auto alloc = MakeCachingAllocator(
      Place::CPU(7), [](size_t n) { return std::aligned_alloc(64, n); },
      [](void* p) { std::free(p); });
  void* a = alloc->Allocate(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kAllocAlignment, 0u);
  EXPECT_EQ(alloc->stats().num_system_allocs, 1u);
  alloc->Free(a, 1000);
  void* b = alloc->Allocate(990);  // same size class
  EXPECT_EQ(a, b);
  EXPECT_EQ(alloc->stats().num_system_allocs, 1u);
  EXPECT_EQ(alloc->stats().num_allocs, 2u);
  alloc->Free(b, 990);
}

TEST(AllocatorTest, HugeRequestsFailWithoutAskingTheSystem) {
  int system_calls = 0;
  auto alloc = MakeCachingAllocator(
      Place::CPU(9),
      [&](size_t n) {
        ++system_calls;
        return std::aligned_alloc(64, n);
      },
      [](void* p) { std::free(p); });
  // Sizes above 2^63 once looped forever finding their size class.
  for (size_t size :
       {SIZE_MAX, SIZE_MAX / 2 + 1, size_t{1} << 62, AllocationLimit() + 1}) {
    EXPECT_EQ(alloc->Allocate(size), nullptr) << size;
  }
  EXPECT_EQ(system_calls, 0);
  EXPECT_EQ(alloc->stats().bytes_in_use, 0u);
}

TEST(AllocatorTest, ASystemRefusalIsNullptrAfterTheCacheIsReleased) {
  int system_calls = 0;
  auto alloc = MakeCachingAllocator(
      Place::CPU(10),
      [&](size_t n) -> void* {
        ++system_calls;
        return n > 4096 ? nullptr : std::aligned_alloc(64, n);
      },
      [](void* p) { std::free(p); });
  void* small = alloc->Allocate(64);
  alloc->Free(small, 64);
  EXPECT_EQ(alloc->Allocate(8192), nullptr);
  EXPECT_EQ(system_calls,
            3);  // the small block, then 8192 twice around a release
  EXPECT_EQ(alloc->stats().bytes_cached, 0u);
}

TEST(AllocatorTest, TracksBytesInUseAndPeak) {
  auto alloc = MakeCachingAllocator(
      Place::CPU(8), [](size_t n) { return std::aligned_alloc(64, n); },
      [](void* p) { std::free(p); });
  void* a = alloc->Allocate(64);
  void* b = alloc->Allocate(128);
  EXPECT_EQ(alloc->stats().bytes_in_use, 192u);
  alloc->Free(a, 64);
  EXPECT_EQ(alloc->stats().bytes_in_use, 128u);
  EXPECT_EQ(alloc->stats().peak_bytes_in_use, 192u);
  EXPECT_EQ(alloc->stats().bytes_cached, 64u);
  alloc->ReleaseCache();
  EXPECT_EQ(alloc->stats().bytes_cached, 0u);
  alloc->ResetPeak();
  EXPECT_EQ(alloc->stats().peak_bytes_in_use, 128u);
  alloc->Free(b, 128);
  EXPECT_EQ(alloc->Allocate(0), nullptr);
}

TEST(AllocatorTest, SteadyStateTensorsAllocateNothingNew) {
  Allocator* cpu = GetAllocator(Place::CPU(9));
  for (int step = 0; step < 3; ++step) {
    Tensor t(DType::kFP32, {64, 100}, Place::CPU(9));
    Tensor u(DType::kFP64, {17}, Place::CPU(9));
  }
  size_t before = cpu->stats().num_system_allocs;
  for (int step = 0; step < 10; ++step) {
    Tensor t(DType::kFP32, {64, 100}, Place::CPU(9));
    Tensor u(DType::kFP64, {17}, Place::CPU(9));
  }
  EXPECT_EQ(cpu->stats().num_system_allocs, before);
}

TEST(AllocatorDeathTest, UnknownPlaceKindAborts) {
  EXPECT_DEATH(GetAllocator(Place::CUDA(63)), "no allocator for cuda:63");
}

}  // namespace
}  // namespace parex
