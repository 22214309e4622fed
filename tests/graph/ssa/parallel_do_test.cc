// The seeds' older forms of data parallelism (graph/ssa/parallel_do.h,
// graph/ssa/multi_thread_transpile.h).
//
// ParallelDo*: the example training programs rewritten into parallel_do form
// (forward and loss ops in block 1 under parallel_do, backward ops in block 2
// under parallel_do_grad with their op_role_var stripped, optimizer ops left
// in block 0) flatten back into the plain program, op for op, and build the
// same SsaGraph as the plain program on 1..4 places (acceptance: "a
// parallel_do program and its plain equivalent build equivalent graphs").
// MultiThread*: the multi-thread transpile of fit_a_line and digits_mlp
// trains, on the reference executor, exactly like the plain program on the
// whole batch; its 1-place graph holds N replicas of every forward op.
#include "graph/ssa/parallel_do.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "graph/builder/backward.h"
#include "graph/ir/validate.h"
#include "graph/ssa/multi_device_builder.h"
#include "graph/ssa/multi_thread_transpile.h"
#include "kernels/reference_executor.h"
#include "kernels/scope.h"
#include "tests/graph/ssa/ssa_test_util.h"

namespace parex {
namespace {

using testing::CountComputation;
using testing::CountOps;
using testing::CpuPlaces;
using ::testing::HasSubstr;
using testing::TrainingProgram;

// A Backward op whose op_role_var lists the pair (param, grad).
bool ProducesGrad(const OpDesc& op, const ParamGrad& pg) {
  const std::vector<std::string> rv = OpRoleVar(op);
  bool listed = false;
  for (size_t k = 0; k + 1 < rv.size(); k += 2) {
    listed |= rv[k] == pg.param && rv[k + 1] == pg.grad;
  }
  return OpRole(op) == kOpRoleBackward && listed;
}

// ---- the parallel_do form of a plain training program -------------------

struct ParallelDoOptions {
  bool with_allreduce = false;   // an allreduce after each gradient producer
  bool strip_loss_role = false;  // the fill of loss@GRAD as plain Backward
};

void SetBlockAttr(OpDesc* op, const std::string& name, int block) {
  proto::OpDesc::Attr* attr = op->mutable_proto()->add_attrs();
  attr->set_name(name);
  attr->set_type(proto::BLOCK);
  attr->set_block_idx(block);
}

// The parallel_do form of `model.main`: block 0 holds the ops before the
// forward ops, `parallel_do` (sub_block 1: the forward and loss ops),
// `parallel_do_grad` (sub_block 2, parent 1: the backward ops, op_role_var
// removed) and the optimizer ops. Temporaries move to the block that writes
// them; feeds, persistables, the loss and the gradients the optimizer reads
// stay in block 0.
Program MakeParallelDoProgram(const ExampleProgram& model,
                              const ParallelDoOptions& options = {}) {
  const Block& src = model.main.global_block();
  EXPECT_EQ(model.main.num_blocks(), 1);
  enum Part { kTop, kForward, kBackward };
  std::vector<Part> part;
  std::set<std::string> fwd_writes, bwd_writes, top_reads;
  int first_fwd = -1, first_bwd = -1, last_stage = 0;
  for (int i = 0; i < src.num_ops(); ++i) {
    const OpDesc& op = src.op(i);
    const int role = OpRole(op);
    Part p = kTop;
    if ((role & (kOpRoleOptimize | kOpRoleLRSched)) == 0) {
      p = (role & kOpRoleBackward) ? kBackward : kForward;
    }
    if (p == kForward && first_fwd < 0) first_fwd = i;
    if (p == kBackward && first_bwd < 0) first_bwd = i;
    // The parts are contiguous: [top], forward, backward, [top].
    const int stage = p != kTop ? p : first_fwd < 0 ? 0 : 3;
    EXPECT_GE(stage, last_stage) << op.Label() << ": parts not contiguous";
    last_stage = stage;
    part.push_back(p);
    for (const std::string& n : op.OutputArgumentNames()) {
      (p == kForward ? fwd_writes : bwd_writes).insert(n);
    }
    if (p == kTop) {
      for (const std::string& n : op.InputArgumentNames()) top_reads.insert(n);
    }
  }

  proto::ProgramDesc desc = model.main.proto();
  proto::BlockDesc* b0 = desc.mutable_blocks(0);
  b0->clear_ops();
  b0->clear_vars();
  proto::BlockDesc* b1 = desc.add_blocks();
  b1->set_idx(1);
  b1->set_parent_idx(0);
  proto::BlockDesc* b2 = desc.add_blocks();
  b2->set_idx(2);
  b2->set_parent_idx(1);
  for (const auto& v : src.vars()) {
    const std::string& n = v->name();
    proto::BlockDesc* home = b0;
    if (!v->persistable() && n != model.loss && !top_reads.count(n)) {
      if (fwd_writes.count(n))
        home = b1;
      else if (bwd_writes.count(n))
        home = b2;
    }
    *home->add_vars() = v->proto();
  }
  b0->add_vars()->set_name("pd_places");
  b0->mutable_vars(b0->vars_size() - 1)
      ->mutable_type()
      ->set_type(proto::VarType::PLACE_LIST);
  b0->add_vars()->set_name("pd_scopes");
  b0->mutable_vars(b0->vars_size() - 1)
      ->mutable_type()
      ->set_type(proto::VarType::STEP_SCOPES);

  std::vector<std::string> params, grads;
  for (const ParamGrad& pg : model.params) {
    params.push_back(pg.param);
    grads.push_back(pg.grad);
  }
  for (int i = 0; i < src.num_ops(); ++i) {
    if (i == first_fwd) {
      OpDesc pd(b0->add_ops(), 0, b0->ops_size() - 1);
      pd.mutable_proto()->set_type("parallel_do");
      pd.SetInput("Inputs", model.feed_names());
      pd.SetInput("Parameters", params);
      pd.SetInput("Places", {"pd_places"});
      pd.SetOutput("Outputs", {model.loss});
      pd.SetOutput("parallel_scopes", {"pd_scopes"});
      SetBlockAttr(&pd, "sub_block", 1);
    }
    if (i == first_bwd) {
      OpDesc pdg(b0->add_ops(), 0, b0->ops_size() - 1);
      pdg.mutable_proto()->set_type("parallel_do_grad");
      pdg.SetInput("Inputs", model.feed_names());
      pdg.SetInput("Parameters", params);
      pdg.SetInput("Places", {"pd_places"});
      pdg.SetInput("Outputs", {model.loss});
      pdg.SetInput("parallel_scopes", {"pd_scopes"});
      pdg.SetOutput("Parameters@GRAD", grads);
      SetBlockAttr(&pdg, "sub_block", 2);
    }
    const OpDesc& op = src.op(i);
    if (part[i] == kTop) {
      *b0->add_ops() = op.proto();
    } else if (part[i] == kForward) {
      *b1->add_ops() = op.proto();
    } else {
      OpDesc copy(b2->add_ops(), 2, b2->ops_size() - 1);
      *copy.mutable_proto() = op.proto();
      copy.RemoveAttr("op_role_var");
      if (options.strip_loss_role &&
          OpRole(copy) == (kOpRoleBackward | kOpRoleLoss)) {
        copy.SetAttr<int>("op_role", kOpRoleBackward);
      }
      const std::vector<std::string> rv = OpRoleVar(op);
      if (options.with_allreduce && rv.size() == 2) {
        OpDesc ar(b2->add_ops(), 2, b2->ops_size() - 1);
        ar.mutable_proto()->set_type("allreduce");
        ar.SetInput("X", {rv[1]});
        ar.SetOutput("Out", {rv[1]});
      }
    }
  }
  return Program(std::move(desc));
}

std::map<std::string, std::string> AttrMap(const proto::OpDesc& op) {
  std::map<std::string, std::string> attrs;
  for (const auto& a : op.attrs()) attrs[a.name()] = a.SerializeAsString();
  return attrs;
}

// Block 0 of `flat` holds the ops of `plain` (type, slots, every attribute
// in any order) in order and declares each of its vars as it does.
void ExpectSameBlock0(const Program& plain, const Program& flat) {
  const Block& a = plain.global_block();
  const Block& b = flat.global_block();
  ASSERT_EQ(a.num_ops(), b.num_ops());
  for (int i = 0; i < a.num_ops(); ++i) {
    proto::OpDesc x = a.op(i).proto(), y = b.op(i).proto();
    EXPECT_EQ(AttrMap(x), AttrMap(y)) << a.op(i).Label();
    x.clear_attrs();
    y.clear_attrs();
    EXPECT_EQ(x.SerializeAsString(), y.SerializeAsString()) << a.op(i).Label();
  }
  for (const auto& v : a.vars()) {
    const VarDesc* w = b.FindLocalVar(v->name());
    ASSERT_NE(w, nullptr) << v->name();
    EXPECT_EQ(v->proto().SerializeAsString(), w->proto().SerializeAsString())
        << v->name();
  }
  for (const auto& op : b.ops()) {
    for (const auto& attr : op->proto().attrs()) {
      EXPECT_NE(attr.type(), proto::BLOCK) << op->Label();
    }
  }
}

class ParallelDoFlattenTest
    : public ::testing::TestWithParam<std::tuple<ExampleKind, int>> {};

TEST_P(ParallelDoFlattenTest, RecoversThePlainProgram) {
  const auto [kind, variant] = GetParam();
  ExampleProgram model = TrainingProgram(kind, OptimizerKind::kSGD);
  ParallelDoOptions options;
  options.with_allreduce = variant & 1;
  options.strip_loss_role = variant & 2;
  Program pd = MakeParallelDoProgram(model, options);
  ASSERT_EQ(pd.num_blocks(), 3);
  for (const auto& op : pd.block(2).ops()) {
    EXPECT_TRUE(OpRoleVar(*op).empty()) << op->Label();
  }
  StatusOr<Program> flat = FlattenParallelDo(pd);
  ASSERT_TRUE(flat.ok()) << flat.status().ToString();
  ExpectSameBlock0(model.main, *flat);
  // op_role_var recovered on the producer of each parameter's gradient.
  for (const ParamGrad& pg : model.params) {
    int producers = 0;
    for (const auto& op : flat->global_block().ops()) {
      producers += ProducesGrad(*op, pg);
    }
    EXPECT_EQ(producers, 1) << pg.param;
  }
  EXPECT_EQ(flat->block(1).num_ops() + flat->block(2).num_ops(), 0);
  EXPECT_TRUE(ValidateProgram(*flat).ok());
}

INSTANTIATE_TEST_SUITE_P(
    ParallelDoExamples, ParallelDoFlattenTest,
    ::testing::Combine(::testing::Values(ExampleKind::kFitALine,
                                         ExampleKind::kDigitsMlp,
                                         ExampleKind::kFashionCnn),
                       ::testing::Values(0, 1, 2, 3)));

// ---- graph equivalence ------------------------------------------------------

std::string OpKey(const SsaGraph& g, int id) {
  if (id < 0) return "-";
  const SsaOp& op = g.op(id);
  std::string key = std::string(SsaOpKindName(op.kind)) + ":" + op.type + "@";
  for (int p : op.places) key += std::to_string(p) + ",";
  for (const std::string& n : op.var_names) key += " " + n;
  if (op.root >= 0) key += " root " + std::to_string(op.root);
  return key;
}

// Ops by kind, type and place, and every edge written as
// (generator, var name@version@place, reader).
struct CanonicalGraph {
  std::map<std::string, int> ops;
  std::multiset<std::string> edges;
};

CanonicalGraph Canonical(const SsaGraph& g) {
  CanonicalGraph c;
  for (const SsaOp& op : g.ops()) ++c.ops[OpKey(g, op.id)];
  for (const SsaVar& v : g.vars()) {
    if (g.removed(v.id)) continue;
    const std::string name =
        (v.is_control()
             ? std::string("@CONTROL(") + ControlReasonName(v.control) + ")"
             : v.name + "@" + std::to_string(v.version)) +
        "@" + std::to_string(v.place);
    const std::string gen = OpKey(g, v.generator);
    if (v.readers.empty()) c.edges.insert(gen + " -> " + name + " -> -");
    for (int r : v.readers) {
      c.edges.insert(gen + " -> " + name + " -> " + OpKey(g, r));
    }
  }
  return c;
}

class ParallelDoGraphTest
    : public ::testing::TestWithParam<std::tuple<ExampleKind, int>> {};

TEST_P(ParallelDoGraphTest, EquivalentToThePlainProgram) {
  const auto [kind, places] = GetParam();
  ExampleProgram model = TrainingProgram(kind, OptimizerKind::kSGD);
  Program pd = MakeParallelDoProgram(model, {true, true});
  for (auto mode : {BuildStrategy::ReduceStrategy::kAllReduce,
                    BuildStrategy::ReduceStrategy::kReduce}) {
    BuildStrategy strategy;
    strategy.reduce = mode;
    StatusOr<SsaGraph> plain = BuildMultiDeviceGraph(
        model.main, CpuPlaces(places), model.loss, strategy);
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    StatusOr<SsaGraph> graph =
        BuildParallelDoGraph(pd, CpuPlaces(places), model.loss, strategy);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    const CanonicalGraph a = Canonical(*plain), b = Canonical(*graph);
    EXPECT_EQ(a.ops, b.ops) << ReduceStrategyName(mode);
    EXPECT_EQ(a.edges, b.edges) << ReduceStrategyName(mode);
    EXPECT_EQ(graph->grads.size(), model.params.size());
  }
}

INSTANTIATE_TEST_SUITE_P(
    ParallelDoExamples, ParallelDoGraphTest,
    ::testing::Combine(::testing::Values(ExampleKind::kDigitsMlp,
                                         ExampleKind::kFashionCnn),
                       ::testing::Values(1, 2, 3, 4)));

// ---- errors -----------------------------------------------------------------

OpDesc& FindOp(Program& p, const std::string& type) {
  for (int i = 0; i < p.global_block().num_ops(); ++i) {
    if (p.global_block().op(i).type() == type) return p.global_block().op(i);
  }
  ADD_FAILURE() << "no " << type;
  return p.global_block().op(0);
}

TEST(ParallelDoErrorTest, ClearMessagesNamingTheOp) {
  ExampleProgram model =
      TrainingProgram(ExampleKind::kFitALine, OptimizerKind::kSGD);
  {
    Program pd = MakeParallelDoProgram(model);
    FindOp(pd, "parallel_do").RemoveAttr("sub_block");
    StatusOr<Program> flat = FlattenParallelDo(pd);
    ASSERT_FALSE(flat.ok());
    EXPECT_THAT(flat.status().message(), HasSubstr("'parallel_do'"));
    EXPECT_THAT(flat.status().message(), HasSubstr("sub_block"));
  }
  {
    Program pd = MakeParallelDoProgram(model);
    FindOp(pd, "parallel_do_grad").SetAttr<int>("sub_block", 2);
    StatusOr<Program> flat = FlattenParallelDo(pd);
    ASSERT_FALSE(flat.ok());
    EXPECT_THAT(flat.status().message(), HasSubstr("'parallel_do_grad'"));
    EXPECT_THAT(flat.status().message(), HasSubstr("expected BLOCK"));
  }
  {
    Program pd = MakeParallelDoProgram(model);
    for (auto& attr :
         *FindOp(pd, "parallel_do").mutable_proto()->mutable_attrs()) {
      if (attr.name() == "sub_block") attr.set_block_idx(7);
    }
    StatusOr<Program> flat = FlattenParallelDo(pd);
    ASSERT_FALSE(flat.ok());
    EXPECT_THAT(flat.status().message(), HasSubstr("sub_block 7"));
  }
  {
    Program pd = MakeParallelDoProgram(model);
    FindOp(pd, "parallel_do").SetInput("Parameters", {"fc_0.w_0", "nope_w"});
    StatusOr<Program> flat = FlattenParallelDo(pd);
    ASSERT_FALSE(flat.ok());
    EXPECT_EQ(flat.status().code(), StatusCode::kNotFound);
    EXPECT_THAT(flat.status().message(), HasSubstr("'parallel_do'"));
    EXPECT_THAT(flat.status().message(), HasSubstr("'nope_w'"));
  }
  {
    Program pd = MakeParallelDoProgram(model);
    FindOp(pd, "parallel_do").SetOutput("Outputs", {"y"});
    StatusOr<Program> flat = FlattenParallelDo(pd);
    ASSERT_FALSE(flat.ok());
    EXPECT_THAT(flat.status().message(), HasSubstr("Outputs entry 'y'"));
  }
  {
    Program pd = MakeParallelDoProgram(model);
    FindOp(pd, "parallel_do").mutable_proto()->set_type("parallel_dont");
    StatusOr<Program> flat = FlattenParallelDo(pd);
    ASSERT_FALSE(flat.ok());
    EXPECT_EQ(flat.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(flat.status().message(), HasSubstr("'parallel_do_grad'"));
  }
}

TEST(ParallelDoErrorTest, PlainProgramUnchanged) {
  ExampleProgram model =
      TrainingProgram(ExampleKind::kDigitsMlp, OptimizerKind::kSGD);
  StatusOr<Program> flat = FlattenParallelDo(model.main);
  ASSERT_TRUE(flat.ok()) << flat.status().ToString();
  EXPECT_EQ(flat->proto().SerializeAsString(),
            model.main.proto().SerializeAsString());
}

// ---- multi-thread transpile -------------------------------------------------

// Deterministic values in [-1, 1).
class Lcg {
 public:
  explicit Lcg(uint64_t seed) : s_(seed * 2654435761u + 1) {}
  double Next() {
    s_ = s_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(s_ >> 11) / 4503599627370496.0 - 1.0;
  }

 private:
  uint64_t s_;
};

// A batch of `rows` for the model's input and label (class ids 0..9).
FeedMap MakeBatch(const ExampleProgram& model, int64_t rows, uint64_t seed) {
  Lcg rng(seed);
  FeedMap feeds;
  for (const std::string& name : model.feed_names()) {
    const VarDesc* var = model.main.global_block().FindVar(name);
    Dims dims = var->dims();
    dims[0] = rows;
    if (var->dtype() == DType::kInt64) {
      std::vector<int64_t> v(Numel(dims));
      for (auto& x : v) x = static_cast<int64_t>((rng.Next() + 1) * 5) % 10;
      feeds[name] = MakeTensor<int64_t>(dims, v);
    } else {
      std::vector<float> v(Numel(dims));
      for (auto& x : v) x = static_cast<float>(rng.Next());
      feeds[name] = MakeTensor<float>(dims, v);
    }
  }
  return feeds;
}

void ExpectClose(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dims(), b.dims()) << what;
  const std::vector<float> x = ToVector<float>(a), y = ToVector<float>(b);
  int bad = 0;
  for (size_t i = 0; i < x.size() && bad < 5; ++i) {
    const double tol =
        1e-5 * std::max({std::fabs(x[i]), std::fabs(y[i]), 1e-2f});
    if (std::fabs(x[i] - y[i]) > tol) {
      ++bad;
      ADD_FAILURE() << what << "[" << i << "]: " << x[i] << " vs " << y[i];
    }
  }
}

class MultiThreadTest
    : public ::testing::TestWithParam<std::tuple<ExampleKind, int>> {};

TEST_P(MultiThreadTest, TrainsLikeTheWholeBatch) {
  const auto [kind, threads] = GetParam();
  ExampleProgram model = TrainingProgram(kind, OptimizerKind::kSGD);
  StatusOr<Program> mt =
      TranspileMultiThread(model.main, model.loss, model.feed_names(), threads);
  ASSERT_TRUE(mt.ok()) << mt.status().ToString();
  ReferenceExecutor executor;
  Scope plain_scope, mt_scope;
  ASSERT_TRUE(executor.Run(model.startup, &plain_scope, {}, {}).ok());
  ASSERT_TRUE(executor.Run(model.startup, &mt_scope, {}, {}).ok());
  for (int step = 0; step < 3; ++step) {
    const FeedMap batch = MakeBatch(model, 8, step + 1);
    auto a = executor.Run(model.main, &plain_scope, batch, {model.loss});
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    auto b = executor.Run(*mt, &mt_scope, batch, {model.loss});
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    ExpectClose((*a)[0], (*b)[0], "loss step " + std::to_string(step));
    for (const ParamGrad& pg : model.params) {
      const Tensor* x = plain_scope.FindVar(pg.param)->GetTensor();
      const Tensor* y = mt_scope.FindVar(pg.param)->GetTensor();
      ASSERT_TRUE(x != nullptr && y != nullptr) << pg.param;
      ExpectClose(*x, *y, pg.param + " step " + std::to_string(step));
    }
  }
}

// The result's structure: a split per feed, N replicas of every forward and
// backward op, one merge (sum, scale carrying op_role_var) per gradient, the
// optimizer ops once; per-thread vars declared, persistables shared.
TEST_P(MultiThreadTest, ProgramStructure) {
  const auto [kind, n] = GetParam();
  ExampleProgram model = TrainingProgram(kind, OptimizerKind::kSGD);
  StatusOr<Program> mt =
      TranspileMultiThread(model.main, model.loss, model.feed_names(), n);
  ASSERT_TRUE(mt.ok()) << mt.status().ToString();
  // Replicated ops N times; the fill of loss@GRAD and the optimizer once.
  std::map<std::string, int> want, after;
  for (const auto& op : model.main.global_block().ops()) {
    const int role = OpRole(*op);
    const bool once = role == (kOpRoleBackward | kOpRoleLoss) ||
                      (role & ~(kOpRoleBackward | kOpRoleLoss)) != 0;
    want[op->type()] += once ? 1 : n;
  }
  const int grads = static_cast<int>(model.params.size());
  want["split"] += 2;              // one per feed
  want["sum"] += 1 + grads;        // the means of the loss and gradients
  want["scale"] += 1 + grads + n;  // ... and the copies of loss@GRAD
  for (const auto& op : mt->global_block().ops()) ++after[op->type()];
  EXPECT_EQ(after, want);
  const Block& out = mt->global_block();
  for (const ParamGrad& pg : model.params) {
    EXPECT_EQ(out.FindVar(pg.param + "@THREAD@0"), nullptr);
    int merges = 0;
    for (const auto& op : out.ops()) {
      if (!ProducesGrad(*op, pg)) continue;
      EXPECT_EQ(op->type(), "scale");
      EXPECT_EQ(OpRoleVar(*op).size(), 2u);
      ++merges;
    }
    EXPECT_EQ(merges, 1) << pg.param;
    const VarDesc* g =
        out.FindVar(pg.grad + "@THREAD@" + std::to_string(n - 1));
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->dims(), out.FindVar(pg.param)->dims());
  }
  for (const std::string& f : model.feed_names()) {
    const VarDesc* src = out.FindVar(f);
    const VarDesc* piece = out.FindVar(f + "@THREAD@1");
    ASSERT_NE(piece, nullptr) << f;
    EXPECT_EQ(piece->dims(), src->dims());  // batch extent -1 stays -1
    EXPECT_EQ(piece->dtype(), src->dtype());
    EXPECT_FALSE(piece->persistable());
  }
}

// On one place the graph runs the threads' replicas side by side.
TEST_P(MultiThreadTest, OnePlaceGraphHasReplicas) {
  const auto [kind, n] = GetParam();
  ExampleProgram model = TrainingProgram(kind, OptimizerKind::kSGD);
  StatusOr<Program> mt =
      TranspileMultiThread(model.main, model.loss, model.feed_names(), n);
  ASSERT_TRUE(mt.ok()) << mt.status().ToString();
  StatusOr<SsaGraph> graph =
      BuildMultiDeviceGraph(*mt, CpuPlaces(1), model.loss, BuildStrategy());
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  std::map<std::string, int> forward;
  for (const auto& op : model.main.global_block().ops()) {
    if ((OpRole(*op) & ~kOpRoleLoss) == kOpRoleForward) ++forward[op->type()];
  }
  for (const auto& [type, count] : forward) {
    EXPECT_EQ(CountComputation(*graph, type), n * count) << type;
  }
  EXPECT_EQ(CountComputation(*graph, "split"), 2);
  EXPECT_EQ(graph->grads.size(), model.params.size());
  // The means carry op_role_var: N threads on each of 2 places.
  graph = BuildMultiDeviceGraph(*mt, CpuPlaces(2), model.loss, {});
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_EQ(CountOps(*graph, SsaOpKind::kAllReduce), model.params.size());
}

INSTANTIATE_TEST_SUITE_P(
    MultiThreadExamples, MultiThreadTest,
    ::testing::Combine(::testing::Values(ExampleKind::kFitALine,
                                         ExampleKind::kDigitsMlp),
                       ::testing::Values(2, 4)));

TEST(MultiThreadErrorTest, StaticBatchSplitsOrFails) {
  ExampleProgram model =
      TrainingProgram(ExampleKind::kFitALine, OptimizerKind::kSGD);
  model.main.global_block().FindVar(model.input)->SetDims({8, 13});
  StatusOr<Program> mt =
      TranspileMultiThread(model.main, model.loss, model.feed_names(), 4);
  ASSERT_TRUE(mt.ok()) << mt.status().ToString();
  EXPECT_EQ(mt->global_block().FindVar(model.input + "@THREAD@3")->dims(),
            (Dims{2, 13}));
  EXPECT_EQ(mt->global_block().FindVar("fc_0.tmp_0@THREAD@0")->dims(),
            (Dims{2, 1}));
  StatusOr<Program> bad =
      TranspileMultiThread(model.main, model.loss, model.feed_names(), 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("feed '" + model.input));
}

TEST(MultiThreadErrorTest, BadArguments) {
  ExampleProgram model =
      TrainingProgram(ExampleKind::kFitALine, OptimizerKind::kSGD);
  const auto feeds = model.feed_names();
  auto message = [&](const std::string& loss, const std::vector<std::string>& f,
                     int n) {
    StatusOr<Program> mt = TranspileMultiThread(model.main, loss, f, n);
    EXPECT_FALSE(mt.ok());
    return mt.ok() ? std::string() : mt.status().message();
  };
  EXPECT_THAT(message(model.loss, feeds, 0), HasSubstr("num_threads"));
  EXPECT_THAT(message("nope", feeds, 2), HasSubstr("loss 'nope'"));
  EXPECT_THAT(message(model.loss, {model.input, "nope"}, 2),
              HasSubstr("feed 'nope'"));
  EXPECT_THAT(message(model.loss, {model.input, "fc_0.w_0"}, 2),
              HasSubstr("persistable"));
  // The label must be split as well.
  EXPECT_THAT(message(model.loss, {model.input}, 2),
              HasSubstr("'" + model.label + "'"));
}

}  // namespace
}  // namespace parex
