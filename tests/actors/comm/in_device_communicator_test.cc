// Tests for actors/comm/in_device_communicator.{h,cc} on CPU places (a CPU
// device context runs its `sum` kernel and copies): all-reduce, reduce to
// every root and broadcast from every root give, bit for bit, what the
// in-process communicator gives (both sum in rank order), over world sizes
// {1,2,3,5}, fp32 and fp64, one group and a fused bucket of two; bad
// tensors and all-gather are errors naming the variable.
#include "actors/comm/in_device_communicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "actors/comm/in_process_communicator.h"

namespace parex {
namespace {

using ::testing::HasSubstr;

// Per place, per group: a tensor with full-mantissa values.
struct Buffers {
  std::vector<std::vector<std::unique_ptr<Tensor>>> owned;  // [group][place]
  std::vector<PlaceTensors> groups;
};

template <typename T>
Buffers Make(int places, const std::vector<Dims>& dims, uint32_t seed) {
  Buffers b;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (const Dims& d : dims) {
    b.owned.emplace_back();
    b.groups.emplace_back();
    for (int p = 0; p < places; ++p) {
      auto t = std::make_unique<Tensor>(DTypeOf<T>(), d, Place::CPU(p));
      for (int64_t i = 0; i < t->numel(); ++i) {
        t->template data<T>()[i] =
            static_cast<T>(dist(gen) * (i % 3 == 0 ? 1e-3 : 1.0));
      }
      b.groups.back().push_back(t.get());
      b.owned.back().push_back(std::move(t));
    }
  }
  return b;
}

bool SameBits(const Buffers& a, const Buffers& b) {
  for (size_t g = 0; g < a.groups.size(); ++g) {
    for (size_t p = 0; p < a.groups[g].size(); ++p) {
      const Tensor* x = a.groups[g][p];
      const Tensor* y = b.groups[g][p];
      if (x->bytes() != y->bytes() ||
          std::memcmp(x->raw_data(), y->raw_data(), x->bytes()) != 0) {
        return false;
      }
    }
  }
  return true;
}

std::vector<Place> CpuPlaces(int n) {
  std::vector<Place> places;
  for (int i = 0; i < n; ++i) places.push_back(Place::CPU(i));
  return places;
}

template <typename T>
void ExpectLikeInProcess(int n, const std::vector<Dims>& dims) {
  CpuDeviceContext context(Place::CPU(0));
  InDeviceCommunicator device(CpuPlaces(n), &context);
  InProcessCommunicator host(CpuPlaces(n));
  uint32_t seed = 1;
  {
    Buffers a = Make<T>(n, dims, seed), b = Make<T>(n, dims, seed);
    ++seed;
    ASSERT_TRUE(device.AllReduce("g", a.groups).ok());
    ASSERT_TRUE(host.AllReduce("g", b.groups).ok());
    EXPECT_TRUE(SameBits(a, b)) << "all_reduce";
  }
  for (int root = 0; root < n; ++root) {
    Buffers a = Make<T>(n, dims, seed), b = Make<T>(n, dims, seed);
    ++seed;
    ASSERT_TRUE(device.Reduce("g", a.groups, root).ok());
    ASSERT_TRUE(host.Reduce("g", b.groups, root).ok());
    EXPECT_TRUE(SameBits(a, b)) << "reduce to " << root;
    Buffers c = Make<T>(n, dims, seed), d = Make<T>(n, dims, seed);
    ++seed;
    ASSERT_TRUE(device.Broadcast("g", c.groups, root).ok());
    ASSERT_TRUE(host.Broadcast("g", d.groups, root).ok());
    EXPECT_TRUE(SameBits(c, d)) << "broadcast from " << root;
  }
}

TEST(InDeviceCommunicatorTest, MatchesTheInProcessBackendBitForBit) {
  for (int n : {1, 2, 3, 5}) {
    SCOPED_TRACE("places " + std::to_string(n));
    ExpectLikeInProcess<float>(n, {{37, 3}});
    ExpectLikeInProcess<double>(n, {{1001}});
    ExpectLikeInProcess<float>(n, {{5, 7}, {1}});  // a fused bucket
  }
}

TEST(InDeviceCommunicatorTest, ASumActuallyChangesTheValues) {
  CpuDeviceContext context(Place::CPU(0));
  InDeviceCommunicator comm(CpuPlaces(2), &context);
  Buffers a = Make<float>(2, {{4}}, 9);
  const float x0 = a.groups[0][0]->data<float>()[1];
  const float x1 = a.groups[0][1]->data<float>()[1];
  ASSERT_TRUE(comm.AllReduce("w@GRAD", a.groups).ok());
  EXPECT_EQ(a.groups[0][0]->data<float>()[1], x0 + x1);
  EXPECT_EQ(a.groups[0][1]->data<float>()[1], x0 + x1);
}

TEST(InDeviceCommunicatorTest, BadTensorsAndAllGatherAreNamedErrors) {
  CpuDeviceContext context(Place::CPU(0));
  InDeviceCommunicator comm(CpuPlaces(2), &context);
  Buffers a = Make<float>(2, {{4}}, 3);
  Tensor other(DType::kFP32, {5}, Place::CPU(1));
  PlaceTensors mismatched = {a.groups[0][0], &other};
  Status s = comm.AllReduce("w@GRAD", mismatched);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("all_reduce 'w@GRAD' place cpu:1"));
  PlaceTensors missing = {a.groups[0][0], nullptr};
  EXPECT_FALSE(comm.Broadcast("w", missing, 0).ok());
  EXPECT_FALSE(comm.Reduce("w", a.groups[0], 2).ok());
  s = comm.AllGather("emb@GRAD", a.groups[0], a.groups[0]);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("emb@GRAD"));
}

}  // namespace
}  // namespace parex
