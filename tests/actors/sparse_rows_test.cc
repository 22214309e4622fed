// lookup_table's sparse gradient (issue 15): with is_sparse, W@GRAD holds
// SelectedRows (a row per id), the optimizers apply it as Fluid does, and
// it trains what the dense gradient trains: the same bits where the sums are
// the same (momentum, adam, sgd without repeated ids), the rows alone with
// adam's lazy_mode; over places (rows gathered in one process, dense sums in
// Reduce mode) as one place with the whole batch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <set>

#include "actors/executor/parallel_executor.h"
#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/builder/program_builder.h"
#include "kernels/op_runner.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kSparseVocab = 12, kSparseDim = 4, kSparseLen = 3;

// ids [-1, 3, 1] -> embedding [12, 4] (is_sparse or not) -> fc over the
// 3 x 4 features -> square error.
struct SparseNet {
  Program main, startup;
  std::string loss, table = "emb";
  std::vector<std::string> params;
};

SparseNet BuildNet(
    bool sparse, const std::function<std::unique_ptr<Optimizer>()>& make_opt) {
  SparseNet net;
  ProgramBuilder b(&net.main, &net.startup);
  auto ids = layers::Data(b, "ids", {kSparseLen, 1}, DType::kInt64);
  auto y = layers::Data(b, "y", {1});
  EXPECT_TRUE(ids.ok() && y.ok());
  ParamAttr attr;
  attr.name = net.table;
  attr.initializer = Initializer::Uniform(-1, 1, 9);
  auto emb = layers::Embedding(b, *ids, kSparseVocab, kSparseDim, attr,
                               /*padding_idx=*/-1, sparse);
  EXPECT_TRUE(emb.ok()) << emb.status().ToString();
  layers::FcOptions o;
  o.size = 1;
  o.num_flatten_dims = 1;
  o.param_attr.initializer = Initializer::Uniform(-1, 1, 4);
  auto pred = layers::Fc(b, *emb, o);
  EXPECT_TRUE(pred.ok()) << pred.status().ToString();
  auto loss = layers::Mean(b, *layers::SquareErrorCost(b, *pred, *y));
  EXPECT_TRUE(loss.ok());
  net.loss = (*loss)->name();
  auto pgs = make_opt()->Minimize(b, *loss);
  EXPECT_TRUE(pgs.ok()) << pgs.status().ToString();
  for (const ParamGrad& pg : *pgs) net.params.push_back(pg.param);
  return net;
}

// Batch `step` of `rows` sequences; `repeat`: ids repeat within the batch.
FeedMap Batch(int step, int64_t rows, bool repeat) {
  Tensor ids(DType::kInt64, {rows, kSparseLen, 1}), y(DType::kFP32, {rows, 1});
  for (int64_t i = 0; i < ids.numel(); ++i) {
    ids.data<int64_t>()[i] =
        repeat ? (i * 5 + step) % kSparseVocab : (i + step * 3) % kSparseVocab;
  }
  for (int64_t r = 0; r < rows; ++r)
    y.data<float>()[r] = static_cast<float>(r % 3) - 0.5f;
  return {{"ids", ids}, {"y", y}};
}

std::unique_ptr<Optimizer> Sgd() {
  return std::make_unique<SGDOptimizer>(LearningRate::Constant(0.1));
}
std::unique_ptr<Optimizer> Momentum() {
  return std::make_unique<MomentumOptimizer>(LearningRate::Constant(0.1), 0.9);
}
std::unique_ptr<Optimizer> Adam() {
  return std::make_unique<AdamOptimizer>(LearningRate::Constant(0.05));
}

std::map<std::string, Tensor> TrainReference(const SparseNet& net, int steps,
                                             int64_t rows, bool repeat,
                                             Scope* scope) {
  ReferenceExecutor exec;
  EXPECT_TRUE(exec.Run(net.startup, scope, {}, {}).ok());
  for (int s = 0; s < steps; ++s) {
    auto r = exec.Run(net.main, scope, Batch(s, rows, repeat), {net.loss});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }
  std::map<std::string, Tensor> params;
  for (const std::string& p : net.params)
    params[p] = scope->FindVar(p)->GetTensor()->Clone();
  return params;
}

bool Bitwise(const Tensor& a, const Tensor& b) {
  return a.bytes() == b.bytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

double Worst(const std::map<std::string, Tensor>& a,
             const std::map<std::string, Tensor>& b) {
  double worst = 0;
  for (const auto& [name, t] : a) {
    const Tensor& u = b.at(name);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double x = t.data<float>()[i], y = u.data<float>()[i];
      worst = std::max(
          worst, std::abs(x - y) / std::max({std::abs(x), std::abs(y), 1e-3}));
    }
  }
  return worst;
}

TEST(SparseRowsTest, TheGradientIsARowPerId) {
  SparseNet net = BuildNet(true, Sgd);
  // Persistable, so the reference executor keeps it in `scope` after the run.
  net.main.global_block().FindVar("emb@GRAD")->SetPersistable(true);
  Scope scope;
  TrainReference(net, 1, 5, true, &scope);
  const Variable* grad = scope.FindVar(net.table + "@GRAD");
  ASSERT_NE(grad, nullptr);
  ASSERT_TRUE(grad->IsSelectedRows());
  const SelectedRows& rows = *grad->GetSelectedRows();
  EXPECT_EQ(rows.height, kSparseVocab);
  EXPECT_EQ(rows.value.dims(), (Dims{5 * kSparseLen, kSparseDim}));
  const FeedMap feed = Batch(0, 5, true);
  const Tensor& ids = feed.at("ids");
  EXPECT_EQ(rows.rows, std::vector<int64_t>(ids.data<int64_t>(),
                                            ids.data<int64_t>() + ids.numel()));
}

// Momentum and (non-lazy) adam take the rows' dense sum, summed in the order
// the dense gradient sums: the same bits. sgd subtracts row by row: the same
// bits without repeated ids, within rounding with them.
TEST(SparseRowsTest, TrainsAsTheDenseGradient) {
  struct Case {
    const char* name;
    std::function<std::unique_ptr<Optimizer>()> opt;
    bool repeat, bitwise;
    int64_t rows;  // 4 rows of 3 distinct ids of 12 repeat none
  };
  for (const Case& c :
       {Case{"momentum", Momentum, true, true, 8},
        Case{"adam", Adam, true, true, 8}, Case{"sgd", Sgd, false, true, 4},
        Case{"sgd repeated ids", Sgd, true, false, 8}}) {
    SCOPED_TRACE(c.name);
    Scope dense_scope, sparse_scope;
    const auto dense = TrainReference(BuildNet(false, c.opt), 6, c.rows,
                                      c.repeat, &dense_scope);
    const auto sparse = TrainReference(BuildNet(true, c.opt), 6, c.rows,
                                       c.repeat, &sparse_scope);
    ASSERT_EQ(dense.size(), sparse.size());
    if (c.bitwise) {
      for (const auto& [name, t] : dense)
        EXPECT_TRUE(Bitwise(t, sparse.at(name))) << name;
    } else {
      EXPECT_LT(Worst(dense, sparse), 1e-5);
      EXPECT_FALSE(Bitwise(dense.at("emb"), sparse.at("emb")));  // row by row
    }
  }
}

// adam's lazy_mode: the rows present update as dense adam updates them;
// the others keep their values and moments.
TEST(SparseRowsTest, LazyAdamUpdatesOnlyTheRowsPresent) {
  SparseNet lazy = BuildNet(true, Adam);
  for (int i = 0; i < lazy.main.global_block().num_ops(); ++i) {
    OpDesc& op = lazy.main.global_block().op(i);
    if (op.type() == "adam") op.SetAttr<bool>("lazy_mode", true);
  }
  Scope lazy_scope, dense_scope;
  ReferenceExecutor exec;
  ASSERT_TRUE(exec.Run(lazy.startup, &lazy_scope, {}, {}).ok());
  const Tensor before = lazy_scope.FindVar("emb")->GetTensor()->Clone();
  const auto after =
      TrainReference(lazy, 1, 2, false, &lazy_scope);  // startup again: same
  const auto dense =
      TrainReference(BuildNet(false, Adam), 1, 2, false, &dense_scope);
  const FeedMap feed = Batch(0, 2, false);
  const Tensor& ids = feed.at("ids");
  std::set<int64_t> present(ids.data<int64_t>(),
                            ids.data<int64_t>() + ids.numel());
  ASSERT_LT(present.size(), static_cast<size_t>(kSparseVocab));
  const float* got = after.at("emb").data<float>();
  for (int64_t r = 0; r < kSparseVocab; ++r) {
    const float* want =
        present.count(r) ? dense.at("emb").data<float>() : before.data<float>();
    for (int64_t j = 0; j < kSparseDim; ++j) {
      EXPECT_EQ(got[r * kSparseDim + j], want[r * kSparseDim + j])
          << "row " << r << (present.count(r) ? " present" : "");
    }
  }
}

// Over 2 and 3 places, AllReduce (rows gathered) and Reduce (dense sums):
// as the reference executor with the whole batch.
TEST(SparseRowsTest, PlacesTrainAsOnePlace) {
  for (auto mode : {BuildStrategy::ReduceStrategy::kAllReduce,
                    BuildStrategy::ReduceStrategy::kReduce}) {
    for (int n : {2, 3}) {
      for (auto make : {Sgd, Adam}) {
        SCOPED_TRACE(std::to_string(n) + " places, mode " +
                     std::to_string(static_cast<int>(mode)));
        const SparseNet net = BuildNet(true, make);
        Scope ref_scope, par_scope;
        const auto want = TrainReference(net, 5, 12, true, &ref_scope);
        ReferenceExecutor startup;
        ASSERT_TRUE(startup.Run(net.startup, &par_scope, {}, {}).ok());
        std::vector<Place> places;
        for (int p = 0; p < n; ++p) places.push_back(Place::CPU(p));
        BuildStrategy strategy;
        strategy.reduce = mode;
        auto pe = ParallelExecutor::Create(places, net.main, net.loss,
                                           &par_scope, strategy);
        ASSERT_TRUE(pe.ok()) << pe.status().ToString();
        for (int s = 0; s < 5; ++s) {
          auto r = (*pe)->Run(Batch(s, 12, true), {net.loss});
          ASSERT_TRUE(r.ok()) << r.status().ToString();
        }
        std::map<std::string, Tensor> got;
        for (const std::string& p : net.params)
          got[p] = par_scope.FindVar(p)->GetTensor()->Clone();
        EXPECT_LT(Worst(got, want), 1e-5);
      }
    }
  }
}

// sum (a gradient accumulated from two lookups of one table) adds sparse
// rows as their dense sum, also when Out is one of them.
TEST(SparseRowsTest, SumAddsRowsAsTheirDenseSum) {
  for (const char* out : {"out", "a"}) {
    SCOPED_TRACE(out);
    Program program;
    Block& block = program.global_block();
    for (const char* name : {"a", "b", "out"}) {
      block.Var(name)->SetDType(DType::kFP32);
      block.Var(name)->SetDims({3, 2});
    }
    OpDesc* op = block.AppendOp("sum");
    op->SetInput("X", {"a", "b"});
    op->SetOutput("Out", {out});
    Scope scope;
    SelectedRows* a = scope.Var("a")->GetMutableSelectedRows();
    a->height = 3;
    a->rows = {2, 0, 2};
    a->value = Tensor(DType::kFP32, {3, 2});
    const float values[] = {1, 2, 10, 20, 100, 200};
    std::memcpy(a->value.raw_data(), values, sizeof(values));
    Tensor* b = scope.Var("b")->GetMutableTensor();
    *b = Tensor(DType::kFP32, {3, 2});
    for (int i = 0; i < 6; ++i) b->data<float>()[i] = 0.5f * i;
    scope.Var("out");
    CpuDeviceContext ctx(Place::CPU(0));
    Status status = RunOp(block.op(0), &scope, &ctx);
    ASSERT_TRUE(status.ok()) << status.ToString();
    const Tensor* got = scope.FindVar(out)->GetTensor();
    ASSERT_NE(got, nullptr);
    // Row 0: 10, 20; row 1: none; row 2: 1 + 100, 2 + 200; plus b.
    const std::vector<float> want = {10, 20.5f, 1, 1.5f, 103, 204.5f};
    EXPECT_EQ(std::vector<float>(got->data<float>(), got->data<float>() + 6),
              want);
  }
}

// An op parex cannot give sparse rows to is named, with the variable.
TEST(SparseRowsTest, OtherReadersOfTheRowsAreNamed) {
  SparseNet net = BuildNet(true, Sgd);
  Block& block = net.main.global_block();
  block.Var("norm")->SetDType(DType::kFP32);
  OpDesc* op = block.AppendOp("squared_l2_norm");
  op->SetInput("X", {"emb@GRAD"});
  op->SetOutput("Out", {"norm"});
  Scope scope;
  ReferenceExecutor exec;
  ASSERT_TRUE(exec.Run(net.startup, &scope, {}, {}).ok());
  auto r = exec.Run(net.main, &scope, Batch(0, 4, true), {net.loss});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("squared_l2_norm"));
  EXPECT_THAT(r.status().message(), HasSubstr("'emb@GRAD', a sparse gradient"));
}

}  // namespace
}  // namespace parex
