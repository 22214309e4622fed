// Parameter-server training of a sparse table (issue 32, acceptance 2):
// a word2vec-style net with a 1M-row embedding and is_sparse, its table
// prefetched by the trainers (which never hold it) and checkpointed by the
// pservers that own its blocks, trains as the same net in one process
// within 1e-5 (SGD: as the dense program; lazy Adam: as the sparse one),
// moving the rows a batch touches, not the table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/cli/npy.h"
#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/builder/program_builder.h"
#include "kernels/io/tensor_io.h"
#include "tests/apps/cli/cli_test_util.h"
#include "tests/apps/cli/pserver_test_util.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;

// Every step's loss within 1e-5 (relative, or absolute below 1).
void ExpectLossesNear(const std::vector<double>& got,
                      const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < want.size(); ++s) {
    EXPECT_NEAR(got[s], want[s], 1e-5 * std::max(1.0, std::abs(want[s])))
        << "step " << s + 1;
  }
}

// Trains `job` in one process of 4 places (its losses in one.jsonl, plus
// `extra` arguments) and expects the pserver run's losses (ps.jsonl) to be
// its `steps` losses within 1e-5; `want` gets the one process's losses.
void ExpectOneProcessLosses(const std::string& dir,
                            const std::vector<std::string>& job,
                            const std::vector<std::string>& extra, size_t steps,
                            std::vector<double>* want) {
  std::vector<std::string> one = {"train", "--places", "cpu:4"};
  one.insert(one.end(), job.begin(), job.end());
  one.insert(one.end(), {"--metrics", "one.jsonl"});
  one.insert(one.end(), extra.begin(), extra.end());
  CliRun alone = RunParex(one, dir);
  ASSERT_EQ(alone.exit_code, 0) << alone.out << alone.err;
  *want = Losses(dir + "/one.jsonl");
  ASSERT_EQ(want->size(), steps);
  ExpectLossesNear(Losses(dir + "/ps.jsonl"), *want);
}

// The largest |a - b| over two fp32 tensors of the same dims.
double MaxAbsDiff(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    worst = std::max(worst,
                     std::abs(double{a.data<float>()[i]} - b.data<float>()[i]));
  }
  return worst;
}

// A word2vec-style net: 4 ids -> embedding [1M, 16] -> fc 32 relu -> fc 10
// -> softmax cross entropy, SGD; `sparse` sets the embedding's is_sparse.
// Saved as `dir`/`name`.pdmodel (and its startup), with 640 rows of ids and
// labels (ids.npy, label.npy): 64 words spread over the table.
constexpr int64_t kTableRows = 1000000, kTableWidth = 16;

void WriteWord2Vec(const std::string& dir, const std::string& name, bool sparse,
                   bool lazy_adam = false) {
  Program main, startup;
  ProgramBuilder b(&main, &startup);
  auto ids = layers::Data(b, "ids", {4, 1}, DType::kInt64);
  auto label = layers::Data(b, "label", {1}, DType::kInt64);
  ASSERT_TRUE(ids.ok() && label.ok());
  ParamAttr emb_attr;
  emb_attr.name = "emb";
  emb_attr.initializer = Initializer::Uniform(-0.5, 0.5, 11);
  auto emb =
      layers::Embedding(b, *ids, kTableRows, kTableWidth, emb_attr, -1, sparse);
  ASSERT_TRUE(emb.ok()) << emb.status().ToString();
  layers::FcOptions hidden;
  hidden.size = 32;
  hidden.act = "relu";
  auto h = layers::Fc(b, *emb, hidden);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  layers::FcOptions out;
  out.size = 10;
  auto logits = layers::Fc(b, *h, out);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  auto loss =
      layers::Mean(b, *layers::SoftmaxWithCrossEntropy(b, *logits, *label));
  ASSERT_TRUE(loss.ok()) << loss.status().ToString();
  if (lazy_adam) {
    // Adam's lazy mode: the touched rows' moments only (the table's
    // moments are as large as the table and live with it).
    AdamOptimizer adam(LearningRate::Constant(0.01));
    ASSERT_TRUE(adam.Minimize(b, *loss).ok());
    for (int i = 0; i < main.global_block().num_ops(); ++i) {
      OpDesc& op = main.global_block().op(i);
      if (op.type() == "adam") op.SetAttr("lazy_mode", true);
    }
  } else {
    SGDOptimizer sgd(LearningRate::Constant(0.5));
    ASSERT_TRUE(sgd.Minimize(b, *loss).ok());
  }
  ASSERT_TRUE(main.Save(dir + "/" + name + ".pdmodel").ok());
  ASSERT_TRUE(startup.Save(dir + "/" + name + "_startup.pdmodel").ok());
  constexpr int64_t kRows = 640;
  Tensor id_rows(DType::kInt64, {kRows, 4, 1}),
      labels(DType::kInt64, {kRows, 1});
  uint64_t x = 12345;
  for (int64_t i = 0; i < id_rows.numel(); ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    // 64 words spread over the table, so that a few steps learn them.
    id_rows.data<int64_t>()[i] =
        static_cast<int64_t>((x >> 33) % 64) * (kTableRows / 64) + 7;
  }
  for (int64_t r = 0; r < kRows; ++r) {
    labels.data<int64_t>()[r] = (id_rows.data<int64_t>()[4 * r] / 7) % 10;
  }
  ASSERT_TRUE(WriteNpy(dir + "/ids.npy", id_rows).ok());
  ASSERT_TRUE(WriteNpy(dir + "/label.npy", labels).ok());
}

// The KB a step node `node` moved ("[a] pserver traffic ...: X KB a step").
double TrafficKbPerStep(const std::string& out, const std::string& node) {
  const std::string key = "[" + node + "] pserver traffic ";
  const size_t at = out.find(key);
  if (at == std::string::npos) return -1;
  const size_t colon = out.find(": ", at);
  return std::stod(out.substr(colon + 2));
}

// Acceptance 2: the 1M-row embedding with is_sparse on 2 trainers and 2
// pservers (the table in row blocks on both) trains as the dense program
// in one process with the same places, within 1e-5 of every step's loss,
// and a trainer moves the rows its batch touched, not the table: under 1%
// of the table's 64 MB a step.
TEST(PserverSparseTest, SparseTableTrainsAsDenseOneProcessMovingOnlyRows) {
  const std::string dir = ScratchDir("pserver_sparse");
  WriteWord2Vec(dir, "sparse", true);
  WriteWord2Vec(dir, "dense", false);
  auto job = [&](const std::string& name) {
    return std::vector<std::string>{
        "--program",    dir + "/" + name + ".pdmodel",
        "--startup",    dir + "/" + name + "_startup.pdmodel",
        "--data",       "ids=ids.npy",
        "--data",       "label=label.npy",
        "--batch",      "32",
        "--no-shuffle", "--no-progress"};
  };
  std::vector<std::string> ps = {"launch", "--topology",
                                 PserverTopology(dir, {2, 2}, 2)};
  const std::vector<std::string> sparse = job("sparse");
  ps.insert(ps.end(), sparse.begin(), sparse.end());
  const std::vector<std::string> base = ps;
  ps.insert(ps.end(), {"--steps", "10", "--metrics", "ps.jsonl"});
  CliRun nodes = RunParex(ps, dir);
  ASSERT_EQ(nodes.exit_code, 0) << nodes.out << nodes.err;
  EXPECT_THAT(nodes.out, HasSubstr("[p1] parameter servers pserver p1 holds"));
  // The trainers prefetch the table: each place's lookup reads the rows
  // its node's batch touched (at most 16 rows x 4 ids, over its two
  // places), never the table.
  for (const char* node : {"a", "b"}) {
    EXPECT_THAT(nodes.out, HasSubstr("[" + std::string(node) +
                                     "] parameter servers trainer " + node +
                                     " sends 5 gradients to 2 pserver(s), "
                                     "prefetches the rows it reads of 'emb'"));
    const std::string key =
        "[" + std::string(node) + "] prefetched      at most ";
    const size_t at = nodes.out.find(key);
    ASSERT_NE(at, std::string::npos) << nodes.out;
    const long rows = std::stol(nodes.out.substr(at + key.size()));
    EXPECT_GT(rows, 0);
    EXPECT_LE(rows, 64);
  }

  std::vector<double> want;
  ExpectOneProcessLosses(dir, job("dense"), {"--steps", "10"}, 10, &want);
  if (::testing::Test::HasFatalFailure()) return;
  EXPECT_LT(want.back(), want.front());  // it learns
  // The saved tables: the first trainer wrote the pservers' blocks, and
  // they hold the dense run's table within 1e-5.
  Tensor ps_table, one_table;
  ASSERT_TRUE(LoadTensorFile(dir + "/parex-sparse/emb", &ps_table).ok());
  ASSERT_TRUE(LoadTensorFile(dir + "/parex-dense/emb", &one_table).ok());
  ASSERT_EQ(ps_table.dims(), (Dims{kTableRows, kTableWidth}));
  ASSERT_EQ(one_table.dims(), ps_table.dims());
  EXPECT_LT(MaxAbsDiff(ps_table, one_table), 1e-5);
  EXPECT_THAT(nodes.out, HasSubstr("(trainable; without the table 'emb')"));
  const double table_kb = kTableRows * kTableWidth * 4 / 1e3;
  for (const char* node : {"a", "b"}) {
    const double kb = TrafficKbPerStep(nodes.out, node);
    EXPECT_GT(kb, 0) << nodes.out;
    EXPECT_LT(kb, table_kb / 100) << node << "\n" << nodes.out;
  }

  // Async mode prefetches on a channel of its own: the deferred parameters
  // never meet a prefetch in a pair's order (one order would deadlock or
  // refuse the messages), and the run learns.
  std::vector<std::string> async = base;
  async.insert(async.end(), {"--max-staleness", "1", "--steps", "10",
                             "--metrics", "async.jsonl"});
  CliRun stale = RunParex(async, dir);
  ASSERT_EQ(stale.exit_code, 0) << stale.out << stale.err;
  const std::vector<double> async_losses = Losses(dir + "/async.jsonl");
  ASSERT_EQ(async_losses.size(), 10u);
  EXPECT_LT(async_losses.back(), async_losses.front());

  // Checkpoints: each pserver writes its block of the table (and the first
  // trainer the rest, without the table); a run stopped at step 5 and
  // resumed from its checkpoint has the losses of the run that went on.
  std::vector<std::string> first = base;
  first.insert(first.end(), {"--checkpoint-dir", "ck", "--checkpoint-every",
                             "5", "--steps", "5", "--metrics", "parts.jsonl"});
  CliRun stopped = RunParex(first, dir);
  ASSERT_EQ(stopped.exit_code, 0) << stopped.out << stopped.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/ck/ckpt-5/emb"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/ck/ckpt-5/parex_state"));
  for (const char* pserver : {"p0", "p1"}) {
    const std::string part = dir + "/ck/ckpt-5." + pserver;
    Tensor block;
    ASSERT_TRUE(LoadTensorFile(part + "/emb", &block).ok()) << part;
    EXPECT_EQ(block.dims(), (Dims{kTableRows / 2, kTableWidth})) << part;
    EXPECT_TRUE(std::filesystem::exists(part + "/parex_shard")) << part;
  }
  std::vector<std::string> rest = base;
  rest.insert(rest.end(),
              {"--checkpoint-dir", "ck", "--checkpoint-every", "5", "--resume",
               "ck", "--steps", "10", "--metrics", "parts.jsonl"});
  CliRun resumed = RunParex(rest, dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("resuming from ck/ckpt-5"));
  EXPECT_EQ(Losses(dir + "/parts.jsonl"), Losses(dir + "/ps.jsonl"));
  EXPECT_EQ(ParameterDigests(resumed.out), ParameterDigests(nodes.out));

  // A pserver whose part of the newest checkpoint is gone: it stops,
  // naming itself and the part, and so do the others.
  std::filesystem::remove_all(dir + "/ck/ckpt-10.p1");
  CliRun lost = RunParex(rest, dir);
  EXPECT_NE(lost.exit_code, 0);
  EXPECT_THAT(
      lost.out + lost.err,
      HasSubstr("pserver 'p1': --resume: checkpoint part 'ck/ckpt-10.p1' "
                "is missing or incomplete"));
}

// Lazy Adam on the prefetched table: its moments stay with it on the
// pservers (a trainer's startup makes neither), the run trains as the same
// sparse program in one process within 1e-5, and the model the first
// trainer saves (the pservers' blocks of the table and of its moments
// gathered to it) holds every persistable of that run within 1e-5.
TEST(PserverSparseTest, LazyAdamKeepsTheTablesMomentsOnThePservers) {
  const std::string dir = ScratchDir("pserver_sparse_adam");
  WriteWord2Vec(dir, "adam", true, /*lazy_adam=*/true);
  const std::vector<std::string> job = {
      "--program",    dir + "/adam.pdmodel",
      "--startup",    dir + "/adam_startup.pdmodel",
      "--data",       "ids=ids.npy",
      "--data",       "label=label.npy",
      "--batch",      "32",
      "--steps",      "8",
      "--no-shuffle", "--no-progress"};
  std::vector<std::string> ps = {"launch", "--topology",
                                 PserverTopology(dir, {2, 2}, 2)};
  ps.insert(ps.end(), job.begin(), job.end());
  ps.insert(ps.end(), {"--metrics", "ps.jsonl", "--save", "ps_model"});
  CliRun nodes = RunParex(ps, dir);
  ASSERT_EQ(nodes.exit_code, 0) << nodes.out << nodes.err;
  EXPECT_THAT(nodes.out, HasSubstr("prefetches the rows it reads of 'emb'"));
  std::vector<double> want;
  ExpectOneProcessLosses(dir, job, {"--save", "one_model"}, 8, &want);
  if (::testing::Test::HasFatalFailure()) return;
  int compared = 0, table_sized = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(dir + "/one_model")) {
    const std::string name = entry.path().filename().string();
    Tensor a, b;
    ASSERT_TRUE(LoadTensorFile(entry.path().string(), &a).ok()) << name;
    ASSERT_TRUE(LoadTensorFile(dir + "/ps_model/" + name, &b).ok()) << name;
    ASSERT_EQ(a.dims(), b.dims()) << name;
    ASSERT_EQ(a.dtype(), DType::kFP32) << name;
    EXPECT_LT(MaxAbsDiff(a, b), 1e-5) << name;
    ++compared;
    table_sized += a.rank() == 2 && a.dim(0) == kTableRows;
  }
  EXPECT_EQ(table_sized, 3) << "the table and its two moments";
  EXPECT_GT(compared, 3);
}

}  // namespace
}  // namespace parex::testing
