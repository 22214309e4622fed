// GlooCommunicator and HierarchicalCommunicator with N ranks as threads of
// one process over Gloo's in-memory HashStore (STYLE.md 16), sweeping world
// size and element count; the cross-process runs are in
// tests/apps/cli/cluster_cli_test.cc.
#include "actors/comm/gloo_communicator.h"

#include <gloo/rendezvous/hash_store.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "actors/comm/hierarchical_communicator.h"
#include "tests/actors/comm/gloo_ranks.h"

namespace parex {
namespace {

float Value(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * 1000 + i % 997);
}

TEST(GlooCommunicatorTest, AllReduceSumsEveryRankExactly) {
  for (int size : {1, 2, 3, 4}) {
    for (int64_t count :
         {int64_t{0}, int64_t{1}, int64_t{1001}, int64_t{300000}}) {
      WithRanks(size, [&](int rank, GlooCommunicator& comm) {
        Tensor t(DType::kFP32, {count});
        for (int64_t i = 0; i < count; ++i) t.data<float>()[i] = Value(rank, i);
        PlaceTensors mine = {&t};
        for (int repeat = 0; repeat < 2;
             ++repeat) {  // the registered buffers again
          if (repeat == 1) {
            for (int64_t i = 0; i < count; ++i)
              t.data<float>()[i] = Value(rank, i);
          }
          Status s = comm.AllReduce("g", mine);
          ASSERT_TRUE(s.ok()) << s.ToString();
          for (int64_t i = 0; i < count; ++i) {
            float want = 0;
            for (int r = 0; r < size; ++r) want += Value(r, i);
            ASSERT_EQ(t.data<float>()[i], want)
                << "size " << size << " count " << count << " element " << i;
          }
        }
      });
    }
  }
}

// A small all-reduce (at most direct_max_bytes(), a fused bucket of two
// tensors) sums the ranks in rank order, ((r0 + r1) + r2) + r3, on every
// rank: values where the order shows (1e8, -1e8, 1, ...) give the
// rank-order sum's bits; a reduce leaves the non-roots' tensors as they
// were; the largest direct size and the smallest ring size both sum right.
TEST(GlooCommunicatorTest, SmallAllReducesSumInRankOrder) {
  const float big[4] = {1e8f, -1e8f, 1.0f, 0.5f};
  for (int size : {2, 3, 4}) {
    WithRanks(size, [&](int rank, GlooCommunicator& comm) {
      Tensor a(DType::kFP32, {3}), b(DType::kFP32, {5});
      auto fill = [&] {
        for (int64_t i = 0; i < 3; ++i)
          a.data<float>()[i] = big[rank] * (i + 1);
        for (int64_t i = 0; i < 5; ++i) b.data<float>()[i] = Value(rank, i);
      };
      auto want_a = [&](int64_t i) {
        float w = big[0] * (i + 1);
        for (int r = 1; r < size; ++r) w += big[r] * (i + 1);
        return w;
      };
      fill();
      const std::vector<PlaceTensors> bucket = {{&a}, {&b}};
      Status s = comm.AllReduce("bucket", bucket);
      ASSERT_TRUE(s.ok()) << s.ToString();
      for (int64_t i = 0; i < 3; ++i) {
        const float got = a.data<float>()[i], want = want_a(i);
        EXPECT_EQ(std::memcmp(&got, &want, sizeof(float)), 0)
            << "size " << size << " rank " << rank << " element " << i;
      }
      for (int64_t i = 0; i < 5; ++i) {
        float want = Value(0, i);
        for (int r = 1; r < size; ++r) want += Value(r, i);
        EXPECT_EQ(b.data<float>()[i], want);
      }
      fill();
      s = comm.Reduce("bucket", bucket, 1);
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(a.data<float>()[0], rank == 1 ? want_a(0) : big[rank]);
      const int64_t edge = static_cast<int64_t>(comm.direct_max_bytes() / 4);
      EXPECT_EQ(comm.direct_max_bytes(),
                size == 2 ? GlooCommunicator::kDirectMaxBytesTwoRanks
                          : GlooCommunicator::kDirectMaxBytes);
      for (int64_t count : {edge, edge + 1}) {
        Tensor t(DType::kFP32, {count});
        for (int64_t i = 0; i < count; ++i) t.data<float>()[i] = Value(rank, i);
        PlaceTensors mine = {&t};
        s = comm.AllReduce("edge" + std::to_string(count), mine);
        ASSERT_TRUE(s.ok()) << s.ToString();
        for (int64_t i = 0; i < count; i += 997) {
          float want = Value(0, i);
          for (int r = 1; r < size; ++r) want += Value(r, i);
          ASSERT_EQ(t.data<float>()[i], want) << "count " << count;
        }
      }
    });
  }
}

// Rounding: every rank must end with the very same bits (the parameters of
// the nodes would drift apart otherwise), and a rerun gives them again.
TEST(GlooCommunicatorTest, EveryRankGetsTheSameBitsRunToRun) {
  for (int size : {2, 3, 4}) {
    const int64_t count = 70001;
    std::vector<std::vector<float>> results(2 * size);
    for (int run = 0; run < 2; ++run) {
      WithRanks(size, [&](int rank, GlooCommunicator& comm) {
        std::mt19937 rng(11 + rank);
        std::uniform_real_distribution<float> dist(-1, 1);
        Tensor t(DType::kFP32, {count});
        for (int64_t i = 0; i < count; ++i) t.data<float>()[i] = dist(rng);
        PlaceTensors mine = {&t};
        ASSERT_TRUE(comm.AllReduce("g", mine).ok());
        results[run * size + rank].assign(t.data<float>(),
                                          t.data<float>() + count);
      });
    }
    for (size_t r = 1; r < results.size(); ++r) {
      ASSERT_EQ(results[r], results[0])
          << "world " << size << ", rank/run " << r;
    }
  }
}

// After an all-reduce each tensor views the communicator's registered
// memory (dims and LoD kept), so a gradient written in place next step is
// reduced with no copy; a tensor that got other memory is still summed
// right.
// (The ring's sizes, above kDirectMaxBytesTwoRanks: a smaller bucket is
// copied in and out.)
TEST(GlooCommunicatorTest, AllReduceLeavesTensorsOnItsMemoryAndStaysRight) {
  WithRanks(2, [](int rank, GlooCommunicator& comm) {
    constexpr int kA = 3 * 20000;  // 240 KB
    static_assert(kA * 4 > GlooCommunicator::kDirectMaxBytesTwoRanks);
    Tensor a(DType::kFP32, {3, 20000}), b(DType::kFP32, {5});
    a.set_lod({{0, 1, 3}});
    std::vector<PlaceTensors> bucket = {{&a}, {&b}};
    const void* first_a = nullptr;
    for (int call = 0; call < 4; ++call) {
      if (call == 2) b = Tensor(DType::kFP32, {5});  // new memory, as a realloc
      for (int i = 0; i < kA; ++i)
        a.data<float>()[i] = static_cast<float>(rank * 100 + i % 50 + call);
      for (int i = 0; i < 5; ++i)
        b.data<float>()[i] = static_cast<float>(rank * 7 + i);
      ASSERT_TRUE(comm.AllReduce("bucket", bucket).ok());
      EXPECT_EQ(a.dims(), (Dims{3, 20000}));
      EXPECT_EQ(a.lod(), (LoD{{0, 1, 3}}));
      EXPECT_EQ(b.dims(), (Dims{5}));
      for (int i = 0; i < kA; ++i)
        ASSERT_EQ(a.data<float>()[i], 100 + 2 * (i % 50 + call));
      for (int i = 0; i < 5; ++i) ASSERT_EQ(b.data<float>()[i], 7 + 2 * i);
      if (call == 0) first_a = a.raw_data();
      // The bucket is one range: b right after a.
      EXPECT_EQ(a.raw_data(), first_a);
      EXPECT_EQ(b.raw_data(), static_cast<const char*>(first_a) + a.bytes());
    }
  });
}

// Sizes that change between calls, and several collectives interleaved,
// many calls each: the pattern that stalled both ranks for good when Gloo's
// registered-buffer algorithms shared one context (1024 then 4096 floats
// hung within 400 runs).
TEST(GlooCommunicatorTest, ChangingSizesManyCallsNeverHang) {
  WithRanks(2, [](int rank, GlooCommunicator& comm) {
    Tensor other(DType::kFP32, {2048});
    PlaceTensors second = {&other};
    for (int64_t count : {int64_t{1024}, int64_t{4096}, int64_t{1024}}) {
      Tensor t(DType::kFP32, {count});
      PlaceTensors mine = {&t};
      for (int call = 0; call < 300; ++call) {
        for (int64_t i = 0; i < count; ++i)
          t.data<float>()[i] = Value(rank, i + call);
        for (int64_t i = 0; i < 2048; ++i)
          other.data<float>()[i] = Value(rank, i);
        Status s = comm.AllReduce("g", mine);
        ASSERT_TRUE(s.ok()) << s.ToString();
        s = comm.AllReduce("h", second);
        ASSERT_TRUE(s.ok()) << s.ToString();
        for (int64_t i = 0; i < count; i += 97) {
          ASSERT_EQ(t.data<float>()[i], Value(0, i + call) + Value(1, i + call))
              << "count " << count << " call " << call;
        }
        ASSERT_EQ(other.data<float>()[5], Value(0, 5) + Value(1, 5));
      }
    }
  });
}

// A name stands for one set of tensors: other tensors under a name whose
// last tensors still view its memory are refused, not silently overwritten
// (the ring's sizes: a small all-reduce leaves no view).
TEST(GlooCommunicatorTest, OtherTensorsUnderANameInUseAreRefused) {
  WithRanks(2, [](int rank, GlooCommunicator& comm) {
    constexpr int kN = 60000;  // 240 KB
    static_assert(kN * 4 > GlooCommunicator::kDirectMaxBytesTwoRanks);
    Tensor a(DType::kFP32, {kN}), b(DType::kFP32, {kN});
    for (int i = 0; i < kN; ++i) a.data<float>()[i] = b.data<float>()[i] = 1;
    ASSERT_TRUE(comm.AllReduce("g", PlaceTensors{&a}).ok());
    Status s = comm.AllReduce("g", PlaceTensors{&b});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(
                  "all_reduce 'g' across nodes: called with other tensors"),
              std::string::npos)
        << s.message();
    for (int i = 0; i < 4; ++i) EXPECT_EQ(a.data<float>()[i], 2);
  });
}

TEST(GlooCommunicatorTest, FusedGroupsReduceAndBroadcast) {
  WithRanks(3, [](int rank, GlooCommunicator& comm) {
    Tensor a(DType::kFP64, {5}), b(DType::kFP64, {2, 3});
    for (int i = 0; i < 5; ++i) a.data<double>()[i] = rank + i;
    for (int i = 0; i < 6; ++i) b.data<double>()[i] = 10 * rank + i;
    std::vector<PlaceTensors> groups = {{&a}, {&b}};
    ASSERT_TRUE(comm.AllReduce("bucket", groups).ok());
    for (int i = 0; i < 5; ++i) EXPECT_EQ(a.data<double>()[i], 3 + 3 * i);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(b.data<double>()[i], 30 + 3 * i);

    Tensor r(DType::kInt64, {4});
    for (int i = 0; i < 4; ++i) r.data<int64_t>()[i] = rank * 100 + i;
    PlaceTensors one = {&r};
    ASSERT_TRUE(comm.Reduce("r", one, 1).ok());
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(r.data<int64_t>()[i], rank == 1 ? 300 + 3 * i : rank * 100 + i);
    }

    Tensor c(DType::kUInt8, {7});
    for (int i = 0; i < 7; ++i)
      c.data<uint8_t>()[i] = static_cast<uint8_t>(rank * 10 + i);
    PlaceTensors bc = {&c};
    ASSERT_TRUE(comm.Broadcast("c", bc, 2).ok());
    for (int i = 0; i < 7; ++i) EXPECT_EQ(c.data<uint8_t>()[i], 20 + i);
  });
}

TEST(GlooCommunicatorTest, ErrorsNameTheCollectiveAndVariable) {
  WithRanks(2, [](int rank, GlooCommunicator& comm) {
    Tensor b(DType::kBool, {3});
    PlaceTensors one = {&b};
    Status s = comm.AllReduce("mask", one);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("all_reduce 'mask'"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("bool"), std::string::npos) << s.message();
    Tensor f(DType::kFP32, {2}), d(DType::kFP64, {2});
    std::vector<PlaceTensors> mixed = {{&f}, {&d}};
    s = comm.AllReduce("bucket", mixed);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("mixes fp32 and fp64"), std::string::npos)
        << s.message();
    comm.Interrupt(Aborted("step 3 aborted: node 'x' is gone"));
    PlaceTensors ff = {&f};
    s = comm.AllReduce("w@GRAD", ff);
    EXPECT_EQ(s.code(), StatusCode::kAborted);
    EXPECT_NE(s.message().find("node 'x' is gone"), std::string::npos);
    comm.Resume();
  });
}

// Two nodes of two places each: the sum is (p0 + p1) + (p2 + p3), on every
// place, and Reduce + Broadcast leave every node's owner with it.
// A write to a peer that vanished (Gloo's writev, OpenSSL's write) fails
// with EPIPE once Connect or Cluster::Join ran, instead of killing the
// process by SIGPIPE before it can name the peer (seen under TSan in the
// kill test: a survivor ended by signal 13); a program's own handler stays.
TEST(GlooCommunicatorTest, AWriteToAVanishedPeerIsAnErrorNotSigpipe) {
  struct sigaction saved {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &saved), 0);
  std::signal(SIGPIPE, SIG_DFL);
  IgnoreSigpipeUnlessHandled();
  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  close(fds[1]);
  const char byte = 'x';
  errno = 0;
  EXPECT_EQ(write(fds[0], &byte, 1), -1);  // still alive: no signal ended it
  EXPECT_EQ(errno, EPIPE);
  close(fds[0]);

  std::signal(SIGPIPE, [](int) {});
  IgnoreSigpipeUnlessHandled();
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_NE(now.sa_handler, SIG_IGN);
  EXPECT_NE(now.sa_handler, SIG_DFL);
  sigaction(SIGPIPE, &saved, nullptr);
}

// Point to point (issue 32's cross-node edges): tensors of several dtypes
// and shapes, an empty one and a large one, in order per pair, between the
// pairs of 3 ranks; what arrives equals what was sent, bit for bit.
TEST(GlooCommunicatorTest, PointToPointCarriesDtypeShapeAndBytes) {
  auto make = [](int from, int to) {
    std::vector<Tensor> ts;
    ts.emplace_back(DType::kFP32, Dims{2, 3});
    for (int i = 0; i < 6; ++i) ts[0].data<float>()[i] = from * 10 + to + i;
    ts.emplace_back(DType::kInt64, Dims{5});
    for (int i = 0; i < 5; ++i) ts[1].data<int64_t>()[i] = -from * 100 - i;
    ts.emplace_back(DType::kFP32, Dims{0, 4});
    ts.emplace_back(DType::kFP64, Dims{300, 1000});
    for (int64_t i = 0; i < ts[3].numel(); ++i)
      ts[3].data<double>()[i] = Value(from, i) + to;
    return ts;
  };
  auto same = [](const Tensor& a, const Tensor& b) {
    return a.dtype() == b.dtype() && a.dims() == b.dims() &&
           (a.bytes() == 0 ||
            std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0);
  };
  // 0 sends to 1 and then 2; 1 receives from 0 and sends to 2; 2 receives
  // from 1 first, then from 0 (each pair in its own order).
  WithRanks(3, [&](int rank, GlooCommunicator& comm) {
    auto send_all = [&](int to) {
      for (const Tensor& t : make(rank, to)) {
        Status s = comm.Send("edge", t, to);
        ASSERT_TRUE(s.ok()) << s.ToString();
      }
    };
    auto recv_all = [&](int from) {
      Tensor got(DType::kFP32, {1});
      for (const Tensor& want : make(from, rank)) {
        Status s = comm.Recv("edge", &got, from);
        ASSERT_TRUE(s.ok()) << s.ToString();
        EXPECT_TRUE(same(got, want)) << "from " << from << " to " << rank;
      }
    };
    if (rank == 0) {
      send_all(1);
      send_all(2);
    } else if (rank == 1) {
      recv_all(0);
      send_all(2);
    } else {
      recv_all(1);
      recv_all(0);
    }
  });
}

// Channels keep their own orders: rank 0 posts "a" on channel 0 and then
// "b" on channel 1 without waiting; rank 1 takes "b" first and "a" after
// (one channel would refuse that order), and a channel out of range is
// refused by number.
TEST(GlooCommunicatorTest, ChannelsKeepTheirOwnOrder) {
  auto Filled = [](const Dims& dims, float value) {
    Tensor t(DType::kFP32, dims);
    std::fill_n(t.data<float>(), t.numel(), value);
    return t;
  };
  WithRanks(2, [&](int rank, GlooCommunicator& comm) {
    if (rank == 0) {
      ASSERT_TRUE(comm.SendAsync("a", Filled({2}, 1.0f), 1, 0).ok());
      ASSERT_TRUE(comm.SendAsync("b", Filled({3}, 2.0f), 1, 1).ok());
      const Status flushed = comm.FlushSends(0);
      ASSERT_TRUE(flushed.ok()) << flushed.ToString();
      const Status bad = comm.Send("c", Filled({1}, 0.0f), 1, 2);
      EXPECT_NE(bad.message().find("channel 2 is none of 0..1"),
                std::string::npos)
          << bad.ToString();
      return;
    }
    Tensor b, a;
    const Status got_b = comm.Recv("b", &b, 0, 1);
    ASSERT_TRUE(got_b.ok()) << got_b.ToString();
    const Status got_a = comm.Recv("a", &a, 0, 0);
    ASSERT_TRUE(got_a.ok()) << got_a.ToString();
    EXPECT_EQ(b.dims(), (Dims{3}));
    EXPECT_EQ(b.data<float>()[2], 2.0f);
    EXPECT_EQ(a.dims(), (Dims{2}));
    EXPECT_EQ(a.data<float>()[0], 1.0f);
  });
}

// A receive under another name, from a rank that never sends, or woken by
// Interrupt, and a bad rank: errors naming the variable and both ranks. A
// send waits for its receive: the sender of the misnamed tensor fails too,
// at the timeout, since its payload is never taken.
TEST(GlooCommunicatorTest, PointToPointErrorsNameTheVariableAndRanks) {
  WithRanks(
      2,
      [](int rank, GlooCommunicator& comm) {
        Tensor t(DType::kFP32, {3});
        if (rank == 0) {
          Status self = comm.Send("a", t, 0);
          EXPECT_EQ(self.code(), StatusCode::kInvalidArgument);
          EXPECT_NE(self.message().find("no other rank"), std::string::npos);
          Status s = comm.Send("a", t, 1);
          ASSERT_FALSE(s.ok());
          EXPECT_NE(s.message().find("send 'a' from node '0' to node '1'"),
                    std::string::npos)
              << s.message();
          return;
        }
        Status s = comm.Recv("b", &t, 0);
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.message().find("recv 'b' on node '1' from node '0'"),
                  std::string::npos)
            << s.message();
        EXPECT_NE(s.message().find("sent 'a' instead"), std::string::npos);
      },
      std::chrono::milliseconds(1500));
  WithRanks(
      2,
      [](int rank, GlooCommunicator& comm) {
        if (rank == 0) return;  // never sends
        Tensor t;
        const auto start = std::chrono::steady_clock::now();
        Status s = comm.Recv("silent", &t, 0);
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.message().find("recv 'silent' on node '1' from node '0'"),
                  std::string::npos)
            << s.message();
        EXPECT_LT(std::chrono::steady_clock::now() - start,
                  std::chrono::seconds(20));
      },
      std::chrono::milliseconds(1500));
  WithRanks(2, [](int rank, GlooCommunicator& comm) {
    if (rank == 0) return;
    std::thread stop([&comm] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      comm.Interrupt(Aborted("the cluster is stopping"));
    });
    Tensor t;
    const auto start = std::chrono::steady_clock::now();
    Status s = comm.Recv("woken", &t, 0);  // the timeout is 30 s
    stop.join();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("the cluster is stopping"), std::string::npos)
        << s.message();
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              std::chrono::seconds(10));
  });
}

TEST(HierarchicalCommunicatorTest, SumsInsideTheNodeThenAcrossNodes) {
  for (int nodes : {1, 2, 3}) {
    WithRanks(nodes, [&](int rank, GlooCommunicator& gloo) {
      std::shared_ptr<GlooCommunicator> cross(&gloo, [](GlooCommunicator*) {});
      HierarchicalCommunicator comm({Place::CPU(0), Place::CPU(1)}, cross,
                                    2 * nodes, 2 * rank);
      EXPECT_EQ(comm.world_size(), 2 * nodes);
      EXPECT_EQ(comm.local_size(), 2);
      EXPECT_EQ(comm.first_local_rank(), 2 * rank);
      EXPECT_TRUE(comm.blocking());
      std::mt19937 rng(7);
      std::uniform_real_distribution<float> dist(-1, 1);
      // Every rank draws every place's values (same seed), keeps its own.
      const int64_t count = 4099;
      std::vector<std::vector<float>> all(2 * nodes, std::vector<float>(count));
      for (auto& place : all) {
        for (float& v : place) v = dist(rng);
      }
      Tensor p0(DType::kFP32, {count}), p1(DType::kFP32, {count});
      std::copy(all[2 * rank].begin(), all[2 * rank].end(), p0.data<float>());
      std::copy(all[2 * rank + 1].begin(), all[2 * rank + 1].end(),
                p1.data<float>());
      PlaceTensors places = {&p0, &p1};
      ASSERT_TRUE(comm.AllReduce("w@GRAD", places).ok());
      for (int64_t i = 0; i < count; ++i) {
        double flat = 0;
        for (int q = 0; q < 2 * nodes; ++q) flat += all[q][i];
        ASSERT_EQ(p0.data<float>()[i], p1.data<float>()[i]);
        ASSERT_NEAR(p0.data<float>()[i], flat, 1e-5) << i;
        if (nodes == 2) {
          // Gloo's ring adds the two node sums; a + b == b + a exactly.
          const float want = (all[0][i] + all[1][i]) + (all[2][i] + all[3][i]);
          ASSERT_EQ(p0.data<float>()[i], want) << i;
        }
      }
      // Reduce to local place 1 on every node, then Broadcast from it.
      std::copy(all[2 * rank].begin(), all[2 * rank].end(), p0.data<float>());
      std::copy(all[2 * rank + 1].begin(), all[2 * rank + 1].end(),
                p1.data<float>());
      ASSERT_TRUE(comm.Reduce("w@GRAD/reduce", places, 1).ok());
      EXPECT_EQ(p0.data<float>()[0], all[2 * rank][0]);  // untouched
      ASSERT_TRUE(comm.Broadcast("w", places, 1).ok());
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(p0.data<float>()[i], p1.data<float>()[i]);
    });
  }
}

}  // namespace
}  // namespace parex
