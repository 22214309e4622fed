// PserverCommunicator with trainers and pservers as Gloo ranks in threads
// of one process: a bucket of gradients in row blocks is summed on its
// pservers as collective mode sums it, and the parameters come back whole;
// sparse rows go and come back as rows; async mode's receives lag by the
// staleness and Drain completes them; a peer that sends what it should not
// is named. The cross-process runs are tests/apps/cli/cluster_pserver_test.cc.
#include "actors/comm/pserver_communicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/actors/comm/gloo_ranks.h"

namespace parex {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<Communicator> Borrow(GlooCommunicator& gloo) {
  return std::shared_ptr<Communicator>(&gloo, [](Communicator*) {});
}

// Ranks 0 and 1 train (2 places and 1), 2 and 3 are pservers: "w" [5, 3] in
// row blocks (rows 0-2 on rank 2, 3-4 on rank 3), "b" [3] whole on rank 3.
std::map<std::string, PserverShard> Shards() {
  PserverShard w{"w", {2, 3}, 5, {5, 3}};
  PserverShard b{"b", {3}, 3, {3}};
  return {{"w", w}, {"w@GRAD", w}, {"b", b}, {"b@GRAD", b}};
}

const std::vector<std::string> kNodes = {"t0", "t1", "ps0", "ps1"};

Tensor Filled(const Dims& dims, float base) {
  Tensor t(DType::kFP32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = base + i;
  return t;
}

// Integer-valued floats: the sums are exact, so the pservers' blocks are
// known: place grads base 100 * (rank + 1) + 10 * place + element.
TEST(PserverCommunicatorTest, ABucketInRowBlocksIsSummedAndComesBack) {
  WithRanks(4, [&](int rank, GlooCommunicator& gloo) {
    const bool pserver = rank >= 2;
    const std::vector<Place> places =
        rank == 0 ? std::vector<Place>{Place::CPU(0), Place::CPU(1)}
                  : std::vector<Place>{Place::CPU(0)};
    PserverCommunicator comm(places, Borrow(gloo), kNodes, pserver, {0, 1},
                             Shards());
    if (!pserver) {
      std::vector<Tensor> gw, gb;
      for (size_t p = 0; p < places.size(); ++p) {
        gw.push_back(Filled({5, 3}, 100.0f * (rank + 1) + 10.0f * p));
        gb.push_back(Filled({3}, 1000.0f * (rank + 1) + 10.0f * p));
      }
      std::vector<PlaceTensors> grads(2);
      for (size_t p = 0; p < places.size(); ++p) {
        grads[0].push_back(&gw[p]);
        grads[1].push_back(&gb[p]);
      }
      ASSERT_TRUE(comm.Reduce("w@GRAD\nb@GRAD", grads, 0).ok());
      std::vector<Tensor> w(places.size(), Tensor(DType::kFP32, {5, 3})),
          b(places.size(), Tensor(DType::kFP32, {3}));
      std::vector<PlaceTensors> params(2);
      for (size_t p = 0; p < places.size(); ++p) {
        params[0].push_back(&w[p]);
        params[1].push_back(&b[p]);
      }
      ASSERT_TRUE(comm.Broadcast("w\nb", params, 0).ok());
      for (size_t p = 0; p < places.size(); ++p) {
        for (int64_t i = 0; i < 15; ++i) {
          // The pservers answer -(their block's sum) for every element.
          const float sum = (100 + 0 + i) + (110 + i) + (200 + i);
          ASSERT_EQ(w[p].data<float>()[i], -sum) << "place " << p << " " << i;
        }
        for (int64_t i = 0; i < 3; ++i) {
          ASSERT_EQ(b[p].data<float>()[i],
                    -((1000 + i) + (1010 + i) + (2000 + i)));
        }
      }
      EXPECT_GT(comm.bytes_sent(), 0);
      return;
    }
    // ps0 holds rows 0-2 of w; ps1 rows 3-4 of w and b.
    Tensor gw, gb;
    std::vector<PlaceTensors> grads = {{&gw}};
    std::string names = "w@GRAD";
    if (rank == 3) {
      grads.push_back({&gb});
      names += "\nb@GRAD";
    }
    ASSERT_TRUE(comm.Reduce(names, grads, 0).ok());
    const int64_t first_row = rank == 2 ? 0 : 3;
    ASSERT_EQ(gw.dims(), (Dims{rank == 2 ? 3 : 2, 3}));
    for (int64_t i = 0; i < gw.numel(); ++i) {
      const int64_t e = first_row * 3 + i;
      // t0: places 0 and 1 in place order, then t1.
      const float want = ((100.0f + e) + (110.0f + e)) + (200.0f + e);
      ASSERT_EQ(gw.data<float>()[i], want) << e;
      gw.data<float>()[i] = -want;
    }
    std::vector<PlaceTensors> params = {{&gw}};
    names = "w";
    if (rank == 3) {
      for (int64_t i = 0; i < 3; ++i) gb.data<float>()[i] *= -1;
      params.push_back({&gb});
      names += "\nb";
    }
    ASSERT_TRUE(comm.Broadcast(names, params, 0).ok());
  });
}

// Async mode, staleness 1: the trainer's receive of step s takes what the
// pserver sent at step s - 1 (step 0 keeps the parameter); Drain brings the
// last one.
TEST(PserverCommunicatorTest, AsyncReceivesLagByTheStalenessAndDrainCompletes) {
  WithRanks(2, [&](int rank, GlooCommunicator& gloo) {
    std::map<std::string, PserverShard> shards = {
        {"b", {"b", {1}, 3, {3}}}, {"b@GRAD", {"b", {1}, 3, {3}}}};
    PserverCommunicator comm({Place::CPU(0)}, Borrow(gloo), {"t0", "ps0"},
                             rank == 1, {0}, shards, /*max_staleness=*/1);
    Tensor g = Filled({3}, 0), b = Filled({3}, -1);
    PlaceTensors grad = {&g}, param = {&b};
    for (int step = 0; step < 4; ++step) {
      ASSERT_TRUE(comm.Reduce("b@GRAD", grad, 0).ok());
      if (rank == 1) {
        for (int64_t i = 0; i < 3; ++i) b.data<float>()[i] = 10.0f * step + i;
      }
      ASSERT_TRUE(comm.Broadcast("b", param, 0).ok());
      if (rank == 0) {
        const float want = step == 0 ? -1.0f : 10.0f * (step - 1);
        EXPECT_EQ(b.data<float>()[0], want) << "step " << step;
      }
    }
    ASSERT_TRUE(comm.Drain().ok());
    if (rank == 0) {
      EXPECT_EQ(b.data<float>()[0], 30.0f);
    }
  });
}

// A trainer that sends a bucket of the wrong size or dtype, or rows outside
// the table: the pserver's error names it and what it sent.
TEST(PserverCommunicatorTest, APeerThatSendsTheWrongThingIsNamed) {
  WithRanks(2, [&](int rank, GlooCommunicator& gloo) {
    std::map<std::string, PserverShard> shards = {
        {"w", {"w", {1}, 4, {4, 2}}}, {"w@GRAD", {"w", {1}, 4, {4, 2}}}};
    PserverCommunicator comm({Place::CPU(0)}, Borrow(gloo), {"t0", "ps0"},
                             rank == 1, {0}, shards);
    if (rank == 0) {
      // Straight through Gloo, as a peer that does not follow the protocol.
      ASSERT_TRUE(gloo.Send("w@GRAD", Filled({7}, 0), 1).ok());
      Tensor ints(DType::kInt64, {8});
      ASSERT_TRUE(gloo.Send("w@GRAD", ints, 1).ok());
      Tensor ids(DType::kInt64, {1});
      ids.data<int64_t>()[0] = 9;
      ASSERT_TRUE(gloo.Send("w@GRAD", ids, 1).ok());
      ASSERT_TRUE(gloo.Send("w@GRAD", Filled({1, 2}, 0), 1).ok());
      return;
    }
    Tensor g;
    PlaceTensors grad = {&g};
    Status size = comm.Reduce("w@GRAD", grad, 0);
    EXPECT_THAT(size.ToString(), HasSubstr("from node 't0'"));
    EXPECT_THAT(size.ToString(), HasSubstr("[7]"));
    Status dtype = comm.Reduce("w@GRAD", grad, 0);
    EXPECT_THAT(dtype.ToString(), HasSubstr("int64"));
    Scope scope;
    Variable* rows = scope.Var("w@GRAD");
    Status outside = comm.ReduceRows("w@GRAD", {rows});
    EXPECT_THAT(outside.ToString(), HasSubstr("row 9 is outside"));
    EXPECT_THAT(outside.ToString(), HasSubstr("node 't0'"));
  });
}

}  // namespace
}  // namespace parex
