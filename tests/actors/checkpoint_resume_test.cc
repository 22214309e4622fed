// Issue 28: a checkpoint holds every persistable with its current value,
// wherever the steps update it. A run of N steps against one checkpointed
// at N/2 (ParallelExecutor::SyncPersistables, then Paddle's tensor files)
// and resumed from it in a fresh scope and executor: every persistable
// equal bit for bit, over {AllReduce, Reduce, Reduce with sliced optimizers,
// memory_optimize in either mode} x {SGD, Momentum, Adam, Adam lazy_mode
// over sparse rows} x {1, 2, 3 places}, with a learning-rate schedule (its
// counter is a persistable too). Across nodes: the CLI tests.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/executor/parallel_executor.h"
#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/builder/program_builder.h"
#include "kernels/io/model_io.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

constexpr int64_t kVocab = 16, kDim = 4, kLen = 3, kRows = 6, kSteps = 8;

enum class Opt { kSgd, kMomentum, kAdam, kLazyAdam };
const char* OptName(Opt o) {
  switch (o) {
    case Opt::kSgd:
      return "sgd";
    case Opt::kMomentum:
      return "momentum";
    case Opt::kAdam:
      return "adam";
    case Opt::kLazyAdam:
      return "adam_lazy_sparse";
  }
  return "?";
}

struct Mode {
  const char* name;
  BuildStrategy build;
};

std::vector<Mode> Modes() {
  std::vector<Mode> modes(5);
  modes[0].name = "allreduce";
  modes[1].name = "reduce";
  modes[1].build.reduce = BuildStrategy::ReduceStrategy::kReduce;
  modes[1].build.slice_optimizer_min_numel = 0;  // never sliced
  modes[2].name = "reduce_sliced";
  modes[2].build.reduce = BuildStrategy::ReduceStrategy::kReduce;
  modes[2].build.slice_optimizer_min_numel = 8;  // every parameter sliced
  modes[3].name = "allreduce_memory_optimize";
  modes[3].build.memory_optimize = true;
  modes[4].name = "reduce_sliced_memory_optimize";
  modes[4].build.reduce = BuildStrategy::ReduceStrategy::kReduce;
  modes[4].build.slice_optimizer_min_numel = 8;
  modes[4].build.memory_optimize = true;
  return modes;
}

// ids -> embedding (sparse rows with lazy adam) -> fc relu -> fc -> square
// error; the learning rate decays piecewise.
struct Net {
  Program main, startup;
  std::string loss;
};

Net BuildNet(Opt opt) {
  Net net;
  ProgramBuilder b(&net.main, &net.startup);
  auto ids = layers::Data(b, "ids", {kLen, 1}, DType::kInt64);
  auto y = layers::Data(b, "y", {1});
  EXPECT_TRUE(ids.ok() && y.ok());
  ParamAttr emb_attr;
  emb_attr.name = "emb";
  emb_attr.initializer = Initializer::Uniform(-1, 1, 9);
  auto emb = layers::Embedding(b, *ids, kVocab, kDim, emb_attr, -1,
                               /*is_sparse=*/opt == Opt::kLazyAdam);
  EXPECT_TRUE(emb.ok()) << emb.status().ToString();
  layers::FcOptions hidden;
  hidden.size = 8;
  hidden.num_flatten_dims = 1;
  hidden.act = "relu";
  hidden.param_attr.initializer = Initializer::Uniform(-0.5, 0.5, 4);
  auto h = layers::Fc(b, *emb, hidden);
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  layers::FcOptions out;
  out.size = 1;
  out.param_attr.initializer = Initializer::Uniform(-0.5, 0.5, 5);
  auto pred = layers::Fc(b, *h, out);
  EXPECT_TRUE(pred.ok()) << pred.status().ToString();
  auto loss = layers::Mean(b, *layers::SquareErrorCost(b, *pred, *y));
  EXPECT_TRUE(loss.ok());
  net.loss = (*loss)->name();
  const LearningRate lr =
      LearningRate::PiecewiseDecay({3, 6}, {0.1, 0.05, 0.02});
  std::unique_ptr<Optimizer> o;
  switch (opt) {
    case Opt::kSgd:
      o = std::make_unique<SGDOptimizer>(lr);
      break;
    case Opt::kMomentum:
      o = std::make_unique<MomentumOptimizer>(lr, 0.9);
      break;
    case Opt::kAdam:
    case Opt::kLazyAdam:
      o = std::make_unique<AdamOptimizer>(lr);
      break;
  }
  EXPECT_TRUE(o->Minimize(b, *loss).ok());
  if (opt == Opt::kLazyAdam) {
    for (int i = 0; i < net.main.global_block().num_ops(); ++i) {
      OpDesc& op = net.main.global_block().op(i);
      if (op.type() == "adam") op.SetAttr<bool>("lazy_mode", true);
    }
  }
  return net;
}

FeedMap Batch(int64_t step) {
  Tensor ids(DType::kInt64, {kRows, kLen, 1}), y(DType::kFP32, {kRows, 1});
  for (int64_t i = 0; i < ids.numel(); ++i) {
    ids.data<int64_t>()[i] = (i * 7 + step * 5) % kVocab;
  }
  for (int64_t r = 0; r < kRows; ++r) {
    y.data<float>()[r] = static_cast<float>((r + step) % 3) - 0.7f;
  }
  return {{"ids", ids}, {"y", y}};
}

std::vector<Place> CpuPlaces(int n) {
  std::vector<Place> places;
  for (int p = 0; p < n; ++p) places.push_back(Place::CPU(p));
  return places;
}

// Steps [first, last) on a new executor over `scope`; then the scope is
// brought up to date (what a checkpoint reads).
void Train(const Net& net, const Mode& mode, int places, Scope* scope,
           int64_t first, int64_t last) {
  ExecutionStrategy exec;
  exec.num_threads = 2;
  auto pe = ParallelExecutor::Create(CpuPlaces(places), net.main, net.loss,
                                     scope, mode.build, exec);
  ASSERT_TRUE(pe.ok()) << pe.status().ToString();
  (*pe)->SetNextStep(first);
  for (int64_t s = first; s < last; ++s) {
    auto out = (*pe)->Run(Batch(s), {net.loss});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
  }
  ASSERT_TRUE((*pe)->SyncPersistables().ok());
}

std::map<std::string, Tensor> Persistables(const Net& net, const Scope& scope) {
  std::map<std::string, Tensor> values;
  for (const std::string& name : PersistableTensorNames(net.main)) {
    const Variable* v = scope.FindVar(name);
    EXPECT_TRUE(v != nullptr && v->GetTensor() != nullptr) << name;
    if (v != nullptr && v->GetTensor() != nullptr) {
      values[name] = v->GetTensor()->Clone();
    }
  }
  return values;
}

// The names whose values differ (or are missing) between two runs.
std::string Differences(const std::map<std::string, Tensor>& a,
                        const std::map<std::string, Tensor>& b) {
  std::string out;
  for (const auto& [name, t] : a) {
    auto it = b.find(name);
    const bool same =
        it != b.end() && it->second.dtype() == t.dtype() &&
        it->second.dims() == t.dims() &&
        std::memcmp(it->second.raw_data(), t.raw_data(), t.bytes()) == 0;
    if (!same) out += " " + name;
  }
  return out;
}

std::string TmpDir(const std::string& name) {
  const std::string dir =
      std::string(PAREX_TEST_TMP_DIR) + "/checkpoint_resume_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(CheckpointResumeTest, EveryModeOptimizerAndPlaceCountResumesBitForBit) {
  ReferenceExecutor startup;
  for (const Mode& mode : Modes()) {
    for (Opt opt : {Opt::kSgd, Opt::kMomentum, Opt::kAdam, Opt::kLazyAdam}) {
      for (int places : {1, 2, 3}) {
        const std::string cell = std::string(mode.name) + "_" + OptName(opt) +
                                 "_" + std::to_string(places);
        SCOPED_TRACE(cell);
        const Net net = BuildNet(opt);
        Scope whole;
        ASSERT_TRUE(startup.Run(net.startup, &whole, {}, {}).ok());
        Train(net, mode, places, &whole, 0, kSteps);
        const auto uninterrupted = Persistables(net, whole);

        Scope first_half;
        ASSERT_TRUE(startup.Run(net.startup, &first_half, {}, {}).ok());
        Train(net, mode, places, &first_half, 0, kSteps / 2);
        const std::string dir = TmpDir(cell);
        ASSERT_TRUE(SavePersistables(net.main, dir, first_half).ok());
        Scope resumed;  // as `parex train --resume`: startup, then the files
        ASSERT_TRUE(startup.Run(net.startup, &resumed, {}, {}).ok());
        ASSERT_TRUE(LoadPersistables(net.main, dir, &resumed).ok());
        Train(net, mode, places, &resumed, kSteps / 2, kSteps);
        EXPECT_EQ(Differences(uninterrupted, Persistables(net, resumed)), "")
            << "persistables that differ from the uninterrupted run";
        // The run trained: the parameters moved from their initial values.
        Scope initial;
        ASSERT_TRUE(startup.Run(net.startup, &initial, {}, {}).ok());
        EXPECT_NE(Differences(Persistables(net, initial), uninterrupted), "");
      }
    }
  }
}

// The defect the matrix pins: in Reduce mode a parameter's Adam state lives
// with the parameter's owner; before SyncPersistables the caller's scope
// (place 0's) still holds the initial beta powers of a parameter place 1
// owns, after it the owner's.
TEST(CheckpointResumeTest, ReduceModeOptimizerStateIsTakenFromItsOwner) {
  const Net net = BuildNet(Opt::kAdam);
  Scope scope;
  ReferenceExecutor startup;
  ASSERT_TRUE(startup.Run(net.startup, &scope, {}, {}).ok());
  BuildStrategy build;
  build.reduce = BuildStrategy::ReduceStrategy::kReduce;
  auto pe =
      ParallelExecutor::Create(CpuPlaces(2), net.main, net.loss, &scope, build);
  ASSERT_TRUE(pe.ok()) << pe.status().ToString();
  for (int64_t s = 0; s < kSteps; ++s) {
    ASSERT_TRUE((*pe)->Run(Batch(s), {net.loss}).ok());
  }
  // Which parameters place 1 owns: their beta1 power is written there only.
  std::vector<std::string> owned_by_1;
  for (const GradInfo& g : (*pe)->graph().grads) {
    if (g.owner == 1) owned_by_1.push_back(g.param + "_beta1_pow_acc_0");
  }
  ASSERT_FALSE(owned_by_1.empty());
  const float after = static_cast<float>(std::pow(0.9, kSteps + 1));
  for (const std::string& name : owned_by_1) {
    EXPECT_FLOAT_EQ(scope.FindVar(name)->GetTensor()->data<float>()[0], 0.9f)
        << name << ": place 0's copy, never updated";
  }
  ASSERT_TRUE((*pe)->SyncPersistables().ok());
  for (const std::string& name : owned_by_1) {
    EXPECT_FLOAT_EQ(scope.FindVar(name)->GetTensor()->data<float>()[0], after)
        << name;
  }
}

}  // namespace
}  // namespace parex
