// Issue 28, the resume matrix through the command line, in {AllReduce,
// Reduce} x {1, 2, 3 places} x {1 node, 2 nodes}: 10 steps checkpointed at
// the end, against 5 steps checkpointed and resumed to 10. Every file of
// the two final checkpoints (every persistable and where training stood) is
// equal byte for byte. The programs: the CNN PaddlePaddle 2.6 made
// (tests/apps/fixtures/paddle_cnn_bn_adam: conv2d, batch_norm, pool2d, Adam)
// with a piecewise learning-rate schedule; and one built here for each of
// SGD, Momentum, Adam and lazy Adam over sparse rows, whose embedding is
// large enough that Reduce mode runs its optimizer as slices. The in-process
// matrix (memory_optimize too) is tests/actors/checkpoint_resume_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/cli/npy.h"
#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/builder/program_builder.h"
#include "tests/apps/cli/cli_test_util.h"

namespace parex::testing {
namespace {

namespace fs = std::filesystem;

const std::string kFixture =
    std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_cnn_bn_adam";

// The files of checkpoint directory `b` that are missing from `a` or differ.
std::string DifferentFiles(const std::string& a, const std::string& b) {
  std::string out;
  int files = 0;
  for (const auto& e : fs::directory_iterator(a)) {
    const std::string name = e.path().filename().string();
    ++files;
    if (!fs::exists(b + "/" + name) ||
        ReadFile(e.path().string()) != ReadFile(b + "/" + name)) {
      out += " " + name;
    }
  }
  EXPECT_GT(files, 5) << a;  // the persistables and the state
  return out;
}

// Every cell of the matrix for `training` (the program's options, run in
// `dir`, 10 steps in all): uninterrupted, and checkpointed at step 5 and
// resumed.
void RunMatrix(const std::string& dir, const std::string& name,
               const std::vector<std::string>& training) {
  for (const char* mode : {"allreduce", "reduce"}) {
    for (int places : {1, 2, 3}) {
      for (int nodes : {1, 2}) {
        const std::string cell = name + "_" + mode + "_" +
                                 std::to_string(places) + "p_" +
                                 std::to_string(nodes) + "n";
        SCOPED_TRACE(cell);
        std::vector<std::string> base;
        if (nodes == 1) {
          base = {"train", "--places", "cpu:" + std::to_string(places)};
        } else {
          fs::create_directories(dir + "/" + cell);
          const std::string topology =
              WriteTopology(dir + "/" + cell, {places, places});
          base = {"launch", "--topology", topology};
        }
        base.insert(base.end(), training.begin(), training.end());
        base.insert(base.end(), {"--no-shuffle", "--no-progress", "--mode",
                                 mode, "--save", cell + "-model"});
        auto run = [&](std::vector<std::string> more) {
          std::vector<std::string> args = base;
          args.insert(args.end(), more.begin(), more.end());
          return RunParex(args, dir);
        };
        // {node}: rank 0 writes (and alone reads) the checkpoints.
        const std::string whole = cell + "-whole-{node}";
        const std::string half = cell + "-half-{node}";
        CliRun w = run({"--checkpoint-dir", whole});
        ASSERT_EQ(w.exit_code, 0) << w.out << w.err;
        CliRun h = run({"--steps", "5", "--checkpoint-dir", half});
        ASSERT_EQ(h.exit_code, 0) << h.out << h.err;
        CliRun r = run({"--checkpoint-dir", half, "--resume", half});
        ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
        // Rank 0's directory ({node} is empty for `parex train`).
        const std::string rank0 = nodes == 1 ? "" : "a";
        EXPECT_THAT(r.out,
                    ::testing::HasSubstr("resuming from " + cell + "-half-" +
                                         rank0 + "/ckpt-5: step 5"));
        const std::string whole0 = dir + "/" + cell + "-whole-" + rank0;
        const std::string half0 = dir + "/" + cell + "-half-" + rank0;
        EXPECT_EQ(DifferentFiles(whole0 + "/ckpt-10", half0 + "/ckpt-10"), "")
            << "files of the resumed run's final checkpoint that differ";
      }
    }
  }
}

TEST(CliResumeMatrixTest, PaddlesCnnWithBatchNormAndAnLrSchedule) {
  const std::string dir = ScratchDir("resume_matrix_cnn");
  WritePaddleCnnFixtureData(dir);
  RunMatrix(dir, "cnn",
            {"--program", kFixture + "/main.pdmodel", "--startup",
             kFixture + "/startup.pdmodel", "--data", "x=x.npy", "--data",
             "label=label.npy", "--batch", "16", "--lr-schedule",
             "piecewise:3,6:0.01,0.005,0.002"});
}

// ids -> embedding [2048, 8] (16384 elements: Reduce mode slices its
// optimizer; sparse rows with lazy adam) -> fc relu -> fc -> square error,
// with `optimizer`, saved as `dir`/main.pdmodel and startup.pdmodel; 120
// rows of data as ids.npy and y.npy.
constexpr int64_t kVocab = 2048, kLen = 3, kRows = 120;

void WriteNetAndData(const std::string& dir, const std::string& optimizer) {
  Program main, startup;
  ProgramBuilder b(&main, &startup);
  auto ids = layers::Data(b, "ids", {kLen, 1}, DType::kInt64);
  auto y = layers::Data(b, "y", {1});
  ASSERT_TRUE(ids.ok() && y.ok());
  ParamAttr emb_attr;
  emb_attr.name = "emb";
  emb_attr.initializer = Initializer::Uniform(-1, 1, 9);
  const bool lazy = optimizer == "adam_lazy_sparse";
  auto emb = layers::Embedding(b, *ids, kVocab, 8, emb_attr, -1, lazy);
  ASSERT_TRUE(emb.ok()) << emb.status().ToString();
  layers::FcOptions hidden;
  hidden.size = 8;
  hidden.act = "relu";
  auto h = layers::Fc(b, *emb, hidden);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  layers::FcOptions out;
  out.size = 1;
  auto pred = layers::Fc(b, *h, out);
  ASSERT_TRUE(pred.ok()) << pred.status().ToString();
  auto loss = layers::Mean(b, *layers::SquareErrorCost(b, *pred, *y));
  ASSERT_TRUE(loss.ok());
  const LearningRate lr = LearningRate::Constant(0.05);
  std::unique_ptr<Optimizer> o;
  if (optimizer == "sgd") o = std::make_unique<SGDOptimizer>(lr);
  if (optimizer == "momentum") o = std::make_unique<MomentumOptimizer>(lr, 0.9);
  if (optimizer == "adam" || lazy) o = std::make_unique<AdamOptimizer>(lr);
  ASSERT_NE(o, nullptr) << optimizer;
  ASSERT_TRUE(o->Minimize(b, *loss).ok());
  for (int i = 0; lazy && i < main.global_block().num_ops(); ++i) {
    OpDesc& op = main.global_block().op(i);
    if (op.type() == "adam") op.SetAttr<bool>("lazy_mode", true);
  }
  ASSERT_TRUE(main.Save(dir + "/main.pdmodel").ok());
  ASSERT_TRUE(startup.Save(dir + "/startup.pdmodel").ok());
  Tensor id_rows(DType::kInt64, {kRows, kLen, 1}),
      y_rows(DType::kFP32, {kRows, 1});
  for (int64_t i = 0; i < id_rows.numel(); ++i) {
    id_rows.data<int64_t>()[i] = (i * 37) % kVocab;
  }
  for (int64_t r = 0; r < kRows; ++r) {
    y_rows.data<float>()[r] = static_cast<float>(r % 3) - 0.7f;
  }
  ASSERT_TRUE(WriteNpy(dir + "/ids.npy", id_rows).ok());
  ASSERT_TRUE(WriteNpy(dir + "/y.npy", y_rows).ok());
}

class CliResumeOptimizerTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CliResumeOptimizerTest, EveryModePlaceCountAndNodeCount) {
  const std::string optimizer = GetParam();
  const std::string dir = ScratchDir("resume_matrix_" + optimizer);
  WriteNetAndData(dir, optimizer);
  RunMatrix(dir, optimizer,
            {"--program", dir + "/main.pdmodel", "--startup",
             dir + "/startup.pdmodel", "--data", "ids=ids.npy", "--data",
             "y=y.npy", "--batch", "12"});
}

INSTANTIATE_TEST_SUITE_P(Optimizers, CliResumeOptimizerTest,
                         ::testing::Values("sgd", "momentum", "adam",
                                           "adam_lazy_sparse"));

}  // namespace
}  // namespace parex::testing
