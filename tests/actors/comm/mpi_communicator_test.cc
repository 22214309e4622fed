// MpiCommunicator (actors/comm/mpi_communicator.h), run by ctest under
// `mpirun -np 3`: every rank runs every test, making the same calls in the
// same order, and any rank's failure fails the run. Expected values come
// from formulas over the ranks, never from the communicator.
#include "actors/comm/mpi_communicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

namespace parex {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Names(int size) {
  std::vector<std::string> names;
  for (int r = 0; r < size; ++r)
    names.push_back("node '" + std::string(1, 'a' + r) + "'");
  return names;
}

// This process's communicator, joined once (as a node joins its cluster).
MpiCommunicator& Comm() {
  static std::shared_ptr<MpiCommunicator> comm = [] {
    const std::optional<MpirunRank> started = StartedByMpirun();
    EXPECT_TRUE(started.has_value()) << "run me under mpirun -np 3";
    StatusOr<std::shared_ptr<MpiCommunicator>> c = MpiCommunicator::Connect(
        started->rank, started->size, Names(started->size));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : nullptr;
  }();
  if (comm == nullptr) std::abort();
  return *comm;
}

// Element i of rank r's tensor: (r + 1) * (i + 1), exact in every dtype
// tested, so the sum over ranks is S * (i + 1), S = 1 + 2 + ... + size.
template <typename T>
Tensor RankValues(DType dtype, int64_t n, int rank) {
  Tensor t(dtype, {n});
  for (int64_t i = 0; i < n; ++i)
    t.data<T>()[i] = static_cast<T>((rank + 1) * (i + 1));
  return t;
}

int64_t RankSum(int size) {
  return static_cast<int64_t>(size) * (size + 1) / 2;
}

template <typename T>
void ExpectSummed(const Tensor& t, int size, int64_t scale = 1) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    ASSERT_EQ(t.data<T>()[i], static_cast<T>(scale * RankSum(size) * (i + 1)))
        << "element " << i;
  }
}

TEST(MpiCommunicatorTest, JoinsAsTheRankMpirunGaveAndRefusesAnother) {
  MpiCommunicator& comm = Comm();
  const std::optional<MpirunRank> started = StartedByMpirun();
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(comm.first_local_rank(), started->rank);
  EXPECT_EQ(comm.world_size(), started->size);
  EXPECT_EQ(comm.local_size(), 1);
  EXPECT_FALSE(comm.blocking());  // issued on the workers
  EXPECT_STREQ(comm.backend(), "mpi");
  const int other = (started->rank + 1) % started->size;
  StatusOr<std::shared_ptr<MpiCommunicator>> wrong =
      MpiCommunicator::Connect(other, started->size, Names(started->size));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(
      wrong.status().message(),
      HasSubstr("mpirun started it as rank " + std::to_string(started->rank)));
}

TEST(MpiCommunicatorTest, AllReduceSumsEverySummableDtypeOnEveryRank) {
  MpiCommunicator& comm = Comm();
  const int rank = comm.first_local_rank();
  const int size = comm.world_size();
  Tensor f32 = RankValues<float>(DType::kFP32, 1000, rank);
  Tensor f64 = RankValues<double>(DType::kFP64, 3, rank);
  Tensor i32 = RankValues<int32_t>(DType::kInt32, 17, rank);
  Tensor i64 = RankValues<int64_t>(DType::kInt64, 40000, rank);  // 320 KB
  ASSERT_TRUE(comm.AllReduce("f32", PlaceTensors{&f32}).ok());
  ASSERT_TRUE(comm.AllReduce("f64", PlaceTensors{&f64}).ok());
  ASSERT_TRUE(comm.AllReduce("i32", PlaceTensors{&i32}).ok());
  ASSERT_TRUE(comm.AllReduce("i64", PlaceTensors{&i64}).ok());
  ExpectSummed<float>(f32, size);
  ExpectSummed<double>(f64, size);
  ExpectSummed<int32_t>(i32, size);
  ExpectSummed<int64_t>(i64, size);
}

// A fused bucket's tensors are summed end to end and left viewing one
// memory (dims and LoD kept), so the next call on them is in place; another
// set of tensors under the name while they still view it is refused.
TEST(MpiCommunicatorTest, AFusedBucketIsLeftViewingItsMemory) {
  MpiCommunicator& comm = Comm();
  const int rank = comm.first_local_rank();
  const int size = comm.world_size();
  Tensor w = RankValues<float>(DType::kFP32, 6, rank);
  w.Reshape({2, 3});
  w.set_lod({{0, 1, 2}});
  Tensor b = RankValues<float>(DType::kFP32, 4, rank);
  std::vector<PlaceTensors> bucket = {{&w}, {&b}};
  ASSERT_TRUE(comm.AllReduce("bucket", bucket).ok());
  EXPECT_EQ(w.dims(), (Dims{2, 3}));
  EXPECT_EQ(w.lod(), (LoD{{0, 1, 2}}));
  EXPECT_EQ(static_cast<const char*>(b.raw_data()),
            static_cast<const char*>(w.raw_data()) + w.bytes());
  ExpectSummed<float>(w, size);
  ExpectSummed<float>(b, size);
  // In place: the sums are summed again.
  ASSERT_TRUE(comm.AllReduce("bucket", bucket).ok());
  ExpectSummed<float>(w, size, size);
  ExpectSummed<float>(b, size, size);

  Tensor w2 = RankValues<float>(DType::kFP32, 6, rank);
  Tensor b2 = RankValues<float>(DType::kFP32, 4, rank);
  Status s = comm.AllReduce("bucket", std::vector<PlaceTensors>{{&w2}, {&b2}});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("all_reduce 'bucket'"));
}

TEST(MpiCommunicatorTest, ReduceLeavesTheSumOnTheRootOnly) {
  MpiCommunicator& comm = Comm();
  const int rank = comm.first_local_rank();
  const int size = comm.world_size();
  const int root = size - 1;
  Tensor t = RankValues<double>(DType::kFP64, 10, rank);
  Tensor u = RankValues<double>(DType::kFP64, 5, rank);
  ASSERT_TRUE(
      comm.Reduce("r", std::vector<PlaceTensors>{{&t}, {&u}}, root).ok());
  if (rank == root) {
    ExpectSummed<double>(t, size);
    ExpectSummed<double>(u, size);
  } else {
    const Tensor mine = RankValues<double>(DType::kFP64, 10, rank);
    EXPECT_EQ(std::memcmp(t.raw_data(), mine.raw_data(), mine.bytes()), 0);
  }
}

// Any dtype's bytes, one tensor or a fused set, from any root.
TEST(MpiCommunicatorTest, BroadcastCopiesTheRootsBytes) {
  MpiCommunicator& comm = Comm();
  const int rank = comm.first_local_rank();
  const int root = 1;
  Tensor half(DType::kFP16, {7});
  Tensor bytes(DType::kUInt8, {5});
  Tensor wide(DType::kInt64, {3});
  uint16_t* const h = static_cast<uint16_t*>(half.raw_data());
  for (int i = 0; i < 7; ++i) h[i] = 100 * rank + i;
  for (int i = 0; i < 5; ++i) bytes.data<uint8_t>()[i] = 10 * rank + i;
  for (int i = 0; i < 3; ++i)
    wide.data<int64_t>()[i] = (int64_t{1} << 40) * rank + i;
  ASSERT_TRUE(comm.Broadcast("half", PlaceTensors{&half}, root).ok());
  ASSERT_TRUE(
      comm.Broadcast("two", std::vector<PlaceTensors>{{&bytes}}, root).ok());
  ASSERT_TRUE(comm.Broadcast("wide", PlaceTensors{&wide}, root).ok());
  for (int i = 0; i < 7; ++i) EXPECT_EQ(h[i], 100 * root + i);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(bytes.data<uint8_t>()[i], 10 * root + i);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(wide.data<int64_t>()[i], (int64_t{1} << 40) * root + i);
  Tensor x(DType::kFP32, {3});
  Tensor y(DType::kFP32, {2});
  for (int i = 0; i < 3; ++i) x.data<float>()[i] = rank + 0.5f * i;
  for (int i = 0; i < 2; ++i) y.data<float>()[i] = -rank - 0.25f * i;
  ASSERT_TRUE(
      comm.Broadcast("xy", std::vector<PlaceTensors>{{&x}, {&y}}, 0).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(x.data<float>()[i], 0.5f * i);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(y.data<float>()[i], -0.25f * i);
}

// Refused before any rank moves data (so every rank refuses alike).
TEST(MpiCommunicatorTest, CallsThatCannotRunAreRefusedNamingTheVariable) {
  MpiCommunicator& comm = Comm();
  Tensor half(DType::kFP16, {4});
  Status s = comm.AllReduce("h@GRAD", PlaceTensors{&half});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("all_reduce 'h@GRAD': dtype"));
  EXPECT_THAT(s.message(), HasSubstr("cannot be summed across nodes"));

  Tensor f(DType::kFP32, {2});
  Tensor d(DType::kFP64, {2});
  s = comm.AllReduce("mixed", std::vector<PlaceTensors>{{&f}, {&d}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("mixes"));

  s = comm.Reduce("r", PlaceTensors{&f}, comm.world_size());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("root rank"));

  Tensor undefined;
  s = comm.AllReduce("u", PlaceTensors{&undefined});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);

  s = comm.AllGather("g", PlaceTensors{&f}, PlaceTensors{&d});
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
}

// The observer hears each call begin and end, numbered alike on every rank
// (the numbers are then summed across the ranks to compare them); an
// interrupt fails the calls after it until Resume.
TEST(MpiCommunicatorTest, CallsAreNumberedAlikeAndAnInterruptStopsThem) {
  MpiCommunicator& comm = Comm();
  std::vector<std::pair<int64_t, bool>> heard;
  comm.SetObserver(
      [&](int64_t seq, Collective, std::string_view name, bool entering) {
        if (name == "n") heard.emplace_back(seq, entering);
      });
  Tensor n(DType::kInt64, {1});
  n.data<int64_t>()[0] = 1;
  ASSERT_TRUE(comm.AllReduce("n", PlaceTensors{&n}).ok());
  ASSERT_EQ(heard.size(), 2u);
  EXPECT_TRUE(heard[0].second);
  EXPECT_FALSE(heard[1].second);
  EXPECT_EQ(heard[0].first, heard[1].first);
  n.data<int64_t>()[0] = heard[0].first;
  ASSERT_TRUE(comm.AllReduce("n", PlaceTensors{&n}).ok());
  EXPECT_EQ(n.data<int64_t>()[0], heard[0].first * comm.world_size());
  EXPECT_EQ(heard[2].first, heard[0].first + 1);

  comm.Interrupt(Aborted("node 'x' was lost"));
  Status s = comm.AllReduce("n", PlaceTensors{&n});
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_THAT(s.message(), HasSubstr("node 'x' was lost"));
  comm.Resume();
  n.data<int64_t>()[0] = 2;
  ASSERT_TRUE(comm.AllReduce("n", PlaceTensors{&n}).ok());
  EXPECT_EQ(n.data<int64_t>()[0], 2 * comm.world_size());
  comm.SetObserver(nullptr);
}

}  // namespace
}  // namespace parex
