// Tests for actors/comm/in_process_communicator.{h,cc}: every collective
// against a naive reference computed here, over world size {1,2,3,4,8} x
// element count {0,1,odd,large} (STYLE.md rule 16), bit for bit.
#include "actors/comm/in_process_communicator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

namespace parex {
namespace {

constexpr int64_t kLarge = (int64_t{1} << 20) + 3;

// Deterministic values with full mantissas, so that a different summation
// order would change the bits of fp results.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <typename T>
T ValueAt(int place, int64_t i, uint64_t seed) {
  const uint64_t bits = Mix(seed * 1000003u + place * 7919u + uint64_t(i));
  if constexpr (std::is_floating_point_v<T>) {
    // [-1, 1) with varied exponents: a third of the values are scaled down.
    T v = static_cast<T>(static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0);
    return (bits & 3) == 0 ? v * static_cast<T>(1e-3) : v;
  } else {
    return static_cast<T>(bits);  // full range: sums overflow and wrap
  }
}

// A tensor of `dims` on `place` filled with ValueAt(place_id, i, seed).
template <typename T>
std::unique_ptr<Tensor> Filled(const Dims& dims, int place, uint64_t seed) {
  auto t = std::make_unique<Tensor>(DTypeOf<T>(), dims, Place::CPU(place));
  T* data = t->template data<T>();
  for (int64_t i = 0; i < t->numel(); ++i) data[i] = ValueAt<T>(place, i, seed);
  return t;
}

// The per-place tensors of one variable, owning them.
struct Var {
  std::vector<std::unique_ptr<Tensor>> owned;
  PlaceTensors ptrs;
};

template <typename T>
Var MakeVar(int n, const Dims& dims, uint64_t seed) {
  Var v;
  for (int p = 0; p < n; ++p) {
    v.owned.push_back(Filled<T>(dims, p, seed));
    v.ptrs.push_back(v.owned.back().get());
  }
  return v;
}

// ((x_0 + x_1) + x_2) + ... elementwise; integers wrap.
template <typename T>
std::vector<T> NaiveSum(const std::vector<std::vector<T>>& xs) {
  std::vector<T> sum = xs[0];
  for (size_t p = 1; p < xs.size(); ++p) {
    for (size_t i = 0; i < sum.size(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        sum[i] =
            static_cast<T>(static_cast<U>(sum[i]) + static_cast<U>(xs[p][i]));
      } else {
        sum[i] = sum[i] + xs[p][i];
      }
    }
  }
  return sum;
}

template <typename T>
std::vector<std::vector<T>> Snapshot(const PlaceTensors& ts) {
  std::vector<std::vector<T>> out;
  for (const Tensor* t : ts) out.push_back(ToVector<T>(*t));
  return out;
}

template <typename T>
bool BitEqual(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Runs the chunks on fresh std::threads taking indices from a counter, in
// no particular order (the runtime's workers in miniature).
void ThreadedParallelFor(int n, const std::function<void(int)>& body) {
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = next.fetch_add(1); i < n; i = next.fetch_add(1)) body(i);
    });
  }
  for (std::thread& t : threads) t.join();
}

// The chunk settings every sweep runs under: default chunks serially, tiny
// chunks in reverse order, small chunks on threads.
std::vector<InProcessCommunicatorOptions> ChunkSettings() {
  std::vector<InProcessCommunicatorOptions> settings(3);
  settings[1].chunk_bytes = 64;
  settings[1].parallel_for = [](int n, const std::function<void(int)>& body) {
    for (int i = n - 1; i >= 0; --i) body(i);
  };
  settings[2].chunk_bytes = 4096;
  settings[2].parallel_for = ThreadedParallelFor;
  return settings;
}

class InProcessCommunicatorSweep
    : public ::testing::TestWithParam<std::tuple<int, int64_t>> {
 protected:
  int world() const { return std::get<0>(GetParam()); }
  int64_t count() const { return std::get<1>(GetParam()); }

  template <typename T>
  void CheckAllReduce(uint64_t seed) {
    for (const auto& options : ChunkSettings()) {
      InProcessCommunicator comm(world(), options);
      Var v = MakeVar<T>(world(), {count()}, seed);
      const std::vector<T> want = NaiveSum(Snapshot<T>(v.ptrs));
      ASSERT_TRUE(comm.AllReduce("x", v.ptrs).ok());
      for (int p = 0; p < world(); ++p) {
        ASSERT_TRUE(BitEqual(ToVector<T>(*v.ptrs[p]), want))
            << DTypeName(DTypeOf<T>()) << " place " << p << " chunk_bytes "
            << options.chunk_bytes;
      }
    }
  }

  template <typename T>
  void CheckReduce(uint64_t seed) {
    const int root = world() - 1;
    for (const auto& options : ChunkSettings()) {
      InProcessCommunicator comm(world(), options);
      Var v = MakeVar<T>(world(), {count()}, seed);
      const auto before = Snapshot<T>(v.ptrs);
      ASSERT_TRUE(comm.Reduce("x", v.ptrs, root).ok());
      const std::vector<T> want = NaiveSum(before);
      for (int p = 0; p < world(); ++p) {
        ASSERT_TRUE(
            BitEqual(ToVector<T>(*v.ptrs[p]), p == root ? want : before[p]))
            << DTypeName(DTypeOf<T>()) << " place " << p;
      }
    }
  }
};

TEST_P(InProcessCommunicatorSweep, AllReduce) {
  CheckAllReduce<float>(1);
  CheckAllReduce<double>(2);
  CheckAllReduce<int32_t>(3);
  CheckAllReduce<int64_t>(4);
}

TEST_P(InProcessCommunicatorSweep, Reduce) {
  CheckReduce<float>(5);
  CheckReduce<double>(6);
  CheckReduce<int32_t>(7);
  CheckReduce<int64_t>(8);
}

TEST_P(InProcessCommunicatorSweep, Broadcast) {
  const int root = world() / 2;
  for (const auto& options : ChunkSettings()) {
    InProcessCommunicator comm(world(), options);
    Var v = MakeVar<double>(world(), {count()}, 9);
    const std::vector<double> want = ToVector<double>(*v.ptrs[root]);
    ASSERT_TRUE(comm.Broadcast("x", v.ptrs, root).ok());
    for (int p = 0; p < world(); ++p) {
      ASSERT_TRUE(BitEqual(ToVector<double>(*v.ptrs[p]), want))
          << "place " << p;
    }
  }
}

TEST_P(InProcessCommunicatorSweep, AllGather) {
  // Row blocks of unequal height (sparse gradients), two columns; the rows
  // add up to about `count`.
  for (const auto& options : ChunkSettings()) {
    InProcessCommunicator comm(world(), options);
    std::vector<std::unique_ptr<Tensor>> owned;
    PlaceTensors inputs, outputs;
    std::vector<float> want;
    for (int p = 0; p < world(); ++p) {
      const int64_t rows = count() == 0 ? 0 : count() / world() + p % 2;
      owned.push_back(Filled<float>({rows, 2}, p, 10));
      inputs.push_back(owned.back().get());
      const std::vector<float> block = ToVector<float>(*owned.back());
      want.insert(want.end(), block.begin(), block.end());
    }
    for (int p = 0; p < world(); ++p) {
      owned.push_back(std::make_unique<Tensor>());
      outputs.push_back(owned.back().get());
    }
    ASSERT_TRUE(comm.AllGather("rows", inputs, outputs).ok());
    for (int p = 0; p < world(); ++p) {
      EXPECT_EQ(outputs[p]->dims(),
                (Dims{static_cast<int64_t>(want.size() / 2), 2}));
      EXPECT_EQ(outputs[p]->place(), Place::CPU(p));
      ASSERT_TRUE(BitEqual(ToVector<float>(*outputs[p]), want))
          << "place " << p;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    InProcessCommunicator, InProcessCommunicatorSweep,
    ::testing::Combine(::testing::Values(1, 2, 3, 4, 8),
                       ::testing::Values(int64_t{0}, int64_t{1}, int64_t{1001},
                                         kLarge)),
    [](const auto& info) {
      return "world" + std::to_string(std::get<0>(info.param)) + "_n" +
             std::to_string(std::get<1>(info.param));
    });

TEST(InProcessCommunicatorTest, BitIdenticalAcrossChunkSizesAndRuns) {
  const int n = 4;
  const int64_t count = 100003;
  std::vector<float> first;
  for (int64_t chunk_bytes : {64, 4096, 65536, 1 << 20}) {
    for (int run = 0; run < 2; ++run) {
      InProcessCommunicatorOptions options;
      options.chunk_bytes = chunk_bytes;
      options.parallel_for = ThreadedParallelFor;
      InProcessCommunicator comm(n, options);
      Var v = MakeVar<float>(n, {count}, 11);
      ASSERT_TRUE(comm.AllReduce("x", v.ptrs).ok());
      const std::vector<float> got = ToVector<float>(*v.ptrs[0]);
      if (first.empty()) first = got;
      ASSERT_TRUE(BitEqual(got, first)) << "chunk_bytes " << chunk_bytes;
    }
  }
  // And the order matters: summing in reverse place order differs somewhere,
  // so the equality above is not vacuous.
  Var v = MakeVar<float>(n, {count}, 11);
  auto xs = Snapshot<float>(v.ptrs);
  std::reverse(xs.begin(), xs.end());
  EXPECT_FALSE(BitEqual(NaiveSum(xs), first));
}

TEST(InProcessCommunicatorTest, FusedBucketIsOneRange) {
  // Groups of every awkward size, empty ones included, cut by chunks that
  // straddle group boundaries.
  const int n = 3;
  const std::vector<int64_t> sizes = {0, 1, 1001, 7, 0, 70000, 16, 0};
  for (int64_t chunk_bytes : {64, 4096, 65536}) {
    InProcessCommunicatorOptions options;
    options.chunk_bytes = chunk_bytes;
    options.parallel_for = ThreadedParallelFor;
    InProcessCommunicator comm(n, options);
    std::vector<Var> vars;
    for (size_t g = 0; g < sizes.size(); ++g) {
      vars.push_back(MakeVar<float>(n, {sizes[g]}, 20 + g));
    }
    std::vector<PlaceTensors> bucket;
    std::vector<std::vector<std::vector<float>>> before;
    for (Var& v : vars) {
      bucket.push_back(v.ptrs);
      before.push_back(Snapshot<float>(v.ptrs));
    }
    ASSERT_TRUE(comm.AllReduce("bucket_0", bucket).ok());
    for (size_t g = 0; g < vars.size(); ++g) {
      const std::vector<float> want = NaiveSum(before[g]);
      for (int p = 0; p < n; ++p) {
        ASSERT_TRUE(BitEqual(ToVector<float>(*vars[g].ptrs[p]), want))
            << "group " << g << " place " << p << " chunk_bytes "
            << chunk_bytes;
      }
    }
    // Reduce then broadcast of the bucket equals the all-reduce.
    for (size_t g = 0; g < vars.size(); ++g) {
      for (int p = 0; p < n; ++p) {
        if (before[g][p].empty()) continue;  // no buffer: nothing to copy
        std::memcpy(vars[g].ptrs[p]->raw_data(), before[g][p].data(),
                    before[g][p].size() * sizeof(float));
      }
    }
    ASSERT_TRUE(comm.Reduce("bucket_0", bucket, 1).ok());
    ASSERT_TRUE(comm.Broadcast("bucket_0", bucket, 1).ok());
    for (size_t g = 0; g < vars.size(); ++g) {
      for (int p = 0; p < n; ++p) {
        ASSERT_TRUE(
            BitEqual(ToVector<float>(*vars[g].ptrs[p]), NaiveSum(before[g])));
      }
    }
  }
}

TEST(InProcessCommunicatorTest, AllReduceOverFiveToSevenPlaces) {
  // Past four places the sums continue in groups of up to three (all-reduce
  // and reduce share that path); the sweep covers 8.
  for (int n : {5, 6, 7}) {
    for (const auto& options : ChunkSettings()) {
      InProcessCommunicator comm(n, options);
      Var v = MakeVar<float>(n, {1001}, 40 + n);
      const std::vector<float> want = NaiveSum(Snapshot<float>(v.ptrs));
      ASSERT_TRUE(comm.AllReduce("x", v.ptrs).ok());
      for (int p = 0; p < n; ++p) {
        ASSERT_TRUE(BitEqual(ToVector<float>(*v.ptrs[p]), want))
            << n << " places, place " << p;
      }
    }
  }
}

TEST(InProcessCommunicatorTest, AllReduceOverSharedBufferSumsEachPlace) {
  // Places 0 and 2 hold one buffer (CPU Reduce mode shares parameters): the
  // sum counts it twice, as two places holding equal values would.
  for (const auto& options : ChunkSettings()) {
    InProcessCommunicator comm(3, options);
    Var v = MakeVar<double>(3, {kLarge}, 50);
    v.ptrs[2]->ShareDataWith(*v.ptrs[0]);
    const std::vector<double> want = NaiveSum(Snapshot<double>(v.ptrs));
    ASSERT_TRUE(comm.AllReduce("x", v.ptrs).ok());
    for (int p = 0; p < 3; ++p) {
      ASSERT_TRUE(BitEqual(ToVector<double>(*v.ptrs[p]), want))
          << "place " << p;
    }
  }
}

TEST(InProcessCommunicatorTest, PlanChunksRunFromSeveralThreads) {
  const int n = 4;
  InProcessCommunicatorOptions options;
  options.chunk_bytes = 4096;
  InProcessCommunicator comm(n, options);
  Var v = MakeVar<double>(n, {kLarge}, 30);
  const std::vector<double> want = NaiveSum(Snapshot<double>(v.ptrs));
  InProcessPlan plan;
  ASSERT_TRUE(
      comm.Prepare(Collective::kAllReduce, "x", v.ptrs, 0, nullptr, &plan)
          .ok());
  EXPECT_EQ(plan.collective(), Collective::kAllReduce);
  EXPECT_EQ(plan.bytes_per_place(), kLarge * 8);
  EXPECT_EQ(plan.num_chunks(), (kLarge * 8 + 4095) / 4096);
  // Four threads, interleaved chunk indices: thread t runs t, t+4, t+8, ...
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&plan, t] {
      for (int i = t; i < plan.num_chunks(); i += 4) plan.RunChunk(i);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int p = 0; p < n; ++p) {
    ASSERT_TRUE(BitEqual(ToVector<double>(*v.ptrs[p]), want)) << "place " << p;
  }
}

TEST(InProcessCommunicatorTest, ZeroElementsPlanNoChunks) {
  InProcessCommunicator comm(3);
  Var v = MakeVar<float>(3, {0, 5}, 0);
  InProcessPlan plan;
  ASSERT_TRUE(
      comm.Prepare(Collective::kAllReduce, "x", v.ptrs, 0, nullptr, &plan)
          .ok());
  EXPECT_EQ(plan.num_chunks(), 0);
  EXPECT_TRUE(comm.AllReduce("x", v.ptrs).ok());
}

TEST(InProcessCommunicatorTest, IntegerSumsWrap) {
  InProcessCommunicator comm(2);
  Tensor a =
      MakeTensor<int32_t>({2}, {std::numeric_limits<int32_t>::max(), -5});
  Tensor b = MakeTensor<int32_t>({2}, {1, 3});
  ASSERT_TRUE(comm.AllReduce("i", PlaceTensors{&a, &b}).ok());
  EXPECT_EQ(ToVector<int32_t>(b),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), -2}));
}

TEST(InProcessCommunicatorTest, BroadcastOntoSharedBufferIsHarmless) {
  // On CPU, Reduce mode may share one parameter buffer between places.
  InProcessCommunicator comm(3);
  Tensor a = MakeTensor<float>({3}, {1, 2, 3});
  Tensor b;
  b.ShareDataWith(a);
  Tensor c = MakeTensor<float>({3}, {0, 0, 0});
  ASSERT_TRUE(comm.Broadcast("w", PlaceTensors{&a, &b, &c}, 0).ok());
  EXPECT_EQ(ToVector<float>(c), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(ToVector<float>(b), (std::vector<float>{1, 2, 3}));
}

// --- errors -----------------------------------------------------------------

std::string ErrorOf(const Status& s) {
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  return s.message();
}

TEST(InProcessCommunicatorErrors, NumelMismatchNamesPlaceAndShapes) {
  InProcessCommunicator comm(3);
  Tensor a(DType::kFP32, {784, 10}, Place::CPU(0));
  Tensor b(DType::kFP32, {784, 100}, Place::CPU(1));
  Tensor c(DType::kFP32, {784, 10}, Place::CPU(2));
  EXPECT_EQ(ErrorOf(comm.AllReduce("fc_0.w_0@GRAD", PlaceTensors{&a, &b, &c})),
            "all_reduce 'fc_0.w_0@GRAD' place cpu:1: shape [784,100] != "
            "[784,10] of cpu:0");
  // Equal element counts in another shape are fine (a reshape).
  Tensor d(DType::kFP32, {7840}, Place::CPU(1));
  std::memset(a.raw_data(), 0, a.bytes());
  std::memset(c.raw_data(), 0, c.bytes());
  std::memset(d.raw_data(), 0, d.bytes());
  EXPECT_TRUE(comm.AllReduce("fc_0.w_0@GRAD", PlaceTensors{&a, &d, &c}).ok());
}

TEST(InProcessCommunicatorErrors, DtypeMismatchNamesPlace) {
  InProcessCommunicator comm(3);
  Tensor a(DType::kFP32, {4}, Place::CPU(0));
  Tensor b(DType::kFP32, {4}, Place::CPU(1));
  Tensor c(DType::kFP64, {4}, Place::CPU(2));
  EXPECT_EQ(ErrorOf(comm.Reduce("b@GRAD", PlaceTensors{&a, &b, &c}, 0)),
            "reduce 'b@GRAD' place cpu:2: dtype fp64 != fp32 of cpu:0");
  EXPECT_EQ(ErrorOf(comm.Broadcast("b", PlaceTensors{&a, &b, &c}, 0)),
            "broadcast 'b' place cpu:2: dtype fp64 != fp32 of cpu:0");
}

TEST(InProcessCommunicatorErrors, NothingIsWrittenOnError) {
  InProcessCommunicator comm(3);
  Tensor a = MakeTensor<float>({2}, {1, 2});
  Tensor b = MakeTensor<float>({2}, {3, 4});
  Tensor c = MakeTensor<float>({3}, {5, 6, 7});
  EXPECT_FALSE(comm.AllReduce("x", PlaceTensors{&a, &b, &c}).ok());
  EXPECT_EQ(ToVector<float>(a), (std::vector<float>{1, 2}));
  EXPECT_EQ(ToVector<float>(b), (std::vector<float>{3, 4}));
}

TEST(InProcessCommunicatorErrors, BadArguments) {
  InProcessCommunicator comm(2);
  Tensor a(DType::kFP32, {4}, Place::CPU(0));
  Tensor b(DType::kFP32, {4}, Place::CPU(1));
  EXPECT_EQ(ErrorOf(comm.AllReduce("x", PlaceTensors{&a})),
            "all_reduce 'x': 1 tensors for 2 places");
  EXPECT_EQ(ErrorOf(comm.AllReduce("x", PlaceTensors{&a, nullptr})),
            "all_reduce 'x' place cpu:1: no tensor");
  Tensor undefined;
  EXPECT_EQ(ErrorOf(comm.AllReduce("x", PlaceTensors{&undefined, &b})),
            "all_reduce 'x' place cpu:0: tensor has no dtype");
  EXPECT_EQ(ErrorOf(comm.Reduce("x", PlaceTensors{&a, &b}, 2)),
            "reduce 'x': root 2 is outside the 2 places");
  EXPECT_EQ(ErrorOf(comm.Broadcast("x", PlaceTensors{&a, &b}, -1)),
            "broadcast 'x': root -1 is outside the 2 places");
  Tensor i8a(DType::kInt8, {4}, Place::CPU(0));
  Tensor i8b(DType::kInt8, {4}, Place::CPU(1));
  EXPECT_EQ(ErrorOf(comm.AllReduce("q", PlaceTensors{&i8a, &i8b})),
            "all_reduce 'q' place cpu:0: dtype int8 cannot be summed (fp32, "
            "fp64, int32, int64)");
  // Broadcast copies bytes of any dtype.
  EXPECT_TRUE(comm.Broadcast("q", PlaceTensors{&i8a, &i8b}, 0).ok());
  EXPECT_EQ(ErrorOf(comm.AllReduce("e", std::vector<PlaceTensors>{})),
            "all_reduce 'e': empty bucket");
}

TEST(InProcessCommunicatorErrors, BucketGroupsNamedAndShareOneDtype) {
  InProcessCommunicator comm(2);
  Tensor a(DType::kFP32, {4}, Place::CPU(0));
  Tensor b(DType::kFP32, {4}, Place::CPU(1));
  Tensor c(DType::kFP64, {4}, Place::CPU(0));
  Tensor d(DType::kFP64, {4}, Place::CPU(1));
  Tensor e(DType::kFP32, {5}, Place::CPU(1));
  EXPECT_EQ(ErrorOf(comm.AllReduce(
                "bucket_1", std::vector<PlaceTensors>{{&a, &b}, {&c, &d}})),
            "all_reduce 'bucket_1' group 1: dtype fp64 != fp32 of group 0 "
            "(a bucket has one dtype)");
  EXPECT_EQ(ErrorOf(comm.AllReduce(
                "bucket_1", std::vector<PlaceTensors>{{&a, &b}, {&a, &e}})),
            "all_reduce 'bucket_1' group 1 place cpu:1: shape [5] != [4] of "
            "cpu:0");
}

TEST(InProcessCommunicatorErrors, AllGatherShapes) {
  InProcessCommunicator comm(2);
  Tensor a(DType::kFP32, {3, 10}, Place::CPU(0));
  Tensor b(DType::kFP32, {5, 12}, Place::CPU(1));
  Tensor out0, out1;
  EXPECT_EQ(ErrorOf(comm.AllGather("emb@GRAD", PlaceTensors{&a, &b},
                                   PlaceTensors{&out0, &out1})),
            "all_gather 'emb@GRAD' place cpu:1: shape [5,12] != [3,10] of "
            "cpu:0 past dim 0");
  Tensor s(DType::kFP32, {}, Place::CPU(1));
  EXPECT_EQ(ErrorOf(comm.AllGather("emb@GRAD", PlaceTensors{&a, &s},
                                   PlaceTensors{&out0, &out1})),
            "all_gather 'emb@GRAD' place cpu:1: shape [] has no rows (rank 0)");
  Tensor c(DType::kFP32, {5, 10}, Place::CPU(1));
  EXPECT_EQ(ErrorOf(comm.AllGather("emb@GRAD", PlaceTensors{&a, &c},
                                   PlaceTensors{&out0, &a})),
            "all_gather 'emb@GRAD' place cpu:1: the output is the input of "
            "cpu:0");
  EXPECT_EQ(ErrorOf(comm.AllGather("emb@GRAD", PlaceTensors{&a, &c},
                                   PlaceTensors{&out0})),
            "all_gather 'emb@GRAD': 2 inputs and 1 outputs for 2 places");
}

}  // namespace
}  // namespace parex
