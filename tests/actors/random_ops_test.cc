// Random ops under the ParallelExecutor (issue 15): training-mode dropout
// draws by (place, op, step number), so a run resumed at step N from the
// persistables of step N ends with the uninterrupted run's parameters bit
// for bit, and places numbered from first_place draw as those places of a
// larger executor do (a node's places as the same places of one process).
#include <gtest/gtest.h>

#include <cstring>

#include "actors/executor/parallel_executor.h"
#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/builder/program_builder.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

// x [-1, 8] -> fc 16 -> dropout 0.5 (training) -> fc 1 -> square error.
struct DropoutNet {
  Program main, startup;
  std::string loss;
  std::vector<std::string> params;
};

DropoutNet BuildNet() {
  DropoutNet net;
  ProgramBuilder b(&net.main, &net.startup);
  auto x = layers::Data(b, "x", {8});
  auto y = layers::Data(b, "y", {1});
  EXPECT_TRUE(x.ok() && y.ok());
  layers::FcOptions o;
  o.size = 16;
  o.act = "relu";
  o.param_attr.initializer = Initializer::Uniform(-1, 1, 3);
  auto h = layers::Fc(b, *x, o);
  EXPECT_TRUE(h.ok());
  auto d = layers::Dropout(b, *h, 0.5f, /*is_test=*/false, /*seed=*/0,
                           "upscale_in_train");
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  o.size = 1;
  o.act = "";
  o.param_attr.initializer = Initializer::Uniform(-1, 1, 5);
  auto pred = layers::Fc(b, *d, o);
  auto cost = layers::SquareErrorCost(b, *pred, *y);
  auto loss = layers::Mean(b, *cost);
  EXPECT_TRUE(loss.ok());
  net.loss = (*loss)->name();
  SGDOptimizer sgd(LearningRate::Constant(0.05));
  auto pgs = sgd.Minimize(b, *loss);
  EXPECT_TRUE(pgs.ok()) << pgs.status().ToString();
  for (const ParamGrad& pg : *pgs) net.params.push_back(pg.param);
  return net;
}

FeedMap Batch(int step, int rows) {
  Tensor x(DType::kFP32, {rows, 8}), y(DType::kFP32, {rows, 1});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] =
        static_cast<float>((i * 7 + step * 3) % 11) / 11.0f - 0.4f;
  }
  for (int64_t i = 0; i < rows; ++i)
    y.data<float>()[i] = static_cast<float>(i % 3) - 1.0f;
  return {{"x", x}, {"y", y}};
}

std::vector<Place> Places(int n) {
  std::vector<Place> places;
  for (int p = 0; p < n; ++p) places.push_back(Place::CPU(p));
  return places;
}

// Runs steps [from, to) on `scope` with a fresh executor whose next step is
// `from` (unless `renumber` is false: it then counts from 0).
void Train(const DropoutNet& net, Scope* scope, int places, int from, int to,
           bool renumber = true, std::vector<float>* losses = nullptr) {
  auto pe = ParallelExecutor::Create(Places(places), net.main, net.loss, scope);
  ASSERT_TRUE(pe.ok()) << pe.status().ToString();
  if (renumber) (*pe)->SetNextStep(from);
  for (int s = from; s < to; ++s) {
    auto r = (*pe)->Run(Batch(s, 8), {net.loss});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (losses != nullptr) {
      for (int64_t p = 0; p < (*r)[0].numel(); ++p)
        losses->push_back((*r)[0].data<float>()[p]);
    }
  }
}

bool SameParams(const DropoutNet& net, const Scope& a, const Scope& b) {
  for (const std::string& name : net.params) {
    const Tensor& x = *a.FindVar(name)->GetTensor();
    const Tensor& y = *b.FindVar(name)->GetTensor();
    if (x.bytes() != y.bytes() ||
        std::memcmp(x.raw_data(), y.raw_data(), x.bytes()) != 0) {
      return false;
    }
  }
  return true;
}

TEST(RandomOpsTest, AResumedRunDrawsAsTheUninterruptedOne) {
  const DropoutNet net = BuildNet();
  ReferenceExecutor startup;
  Scope whole, resumed, restarted;
  for (Scope* s : {&whole, &resumed, &restarted}) {
    ASSERT_TRUE(startup.Run(net.startup, s, {}, {}).ok());
  }
  Train(net, &whole, 2, 0, 6);
  // Steps 0-2, then a new executor (a new process) for steps 3-5.
  Train(net, &resumed, 2, 0, 3);
  Train(net, &resumed, 2, 3, 6);
  EXPECT_TRUE(SameParams(net, whole, resumed));
  // Numbering the second half from 0 again repeats steps 0-2's masks: the
  // parameters leave the uninterrupted run's (what resuming used to do).
  Train(net, &restarted, 2, 0, 3);
  Train(net, &restarted, 2, 3, 6, /*renumber=*/false);
  EXPECT_FALSE(SameParams(net, whole, restarted));
}

// Each place draws by its global index: place 1 of a two-place executor
// draws what place 0 of an executor whose first_place is 1 draws.
TEST(RandomOpsTest, PlacesDrawByTheirGlobalIndex) {
  const DropoutNet net = BuildNet();
  ReferenceExecutor startup;
  Scope two, second, first;
  for (Scope* s : {&two, &second, &first})
    ASSERT_TRUE(startup.Run(net.startup, s, {}, {}).ok());
  auto pe2 = ParallelExecutor::Create(Places(2), net.main, net.loss, &two);
  ExecutionStrategy exec;
  exec.first_place = 1;
  auto pe_second = ParallelExecutor::Create(Places(1), net.main, net.loss,
                                            &second, {}, exec);
  auto pe_first =
      ParallelExecutor::Create(Places(1), net.main, net.loss, &first);
  ASSERT_TRUE(pe2.ok() && pe_second.ok() && pe_first.ok());
  const FeedMap feed = Batch(0, 8);
  FeedMap second_half;
  for (const auto& [name, t] : feed) second_half[name] = t.Slice(4, 8);
  auto both = (*pe2)->Run(feed, {net.loss});
  auto alone = (*pe_second)->Run(second_half, {net.loss});
  auto as_first = (*pe_first)->Run(second_half, {net.loss});
  ASSERT_TRUE(both.ok() && alone.ok() && as_first.ok());
  EXPECT_EQ((*both)[0].data<float>()[1], (*alone)[0].data<float>()[0]);
  EXPECT_NE((*both)[0].data<float>()[1], (*as_first)[0].data<float>()[0]);
}

}  // namespace
}  // namespace parex
