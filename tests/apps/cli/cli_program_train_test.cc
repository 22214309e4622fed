// parex train --program: a user's Paddle program and .npy data (issue 15).
// The fixture is a CNN PaddlePaddle 2.6 built and trained
// (tests/apps/fixtures/paddle_cnn_bn_adam/make_fixture.py): conv2d,
// batch_norm, pool2d, dropout off, Adam with a piecewise learning rate.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli/npy.h"
#include "graph/builder/channels_last.h"
#include "graph/builder/prune.h"
#include "graph/ir/program.h"
#include "kernels/io/model_io.h"
#include "kernels/io/tensor_io.h"
#include "kernels/reference_executor.h"
#include "kernels/scope.h"
#include "tests/apps/cli/cli_test_util.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kFixture =
    std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_cnn_bn_adam";

std::vector<double> Lines(const std::string& path, bool json) {
  std::vector<double> v;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    v.push_back(json ? nlohmann::json::parse(line)["loss"].get<double>()
                     : std::stod(line));
  }
  return v;
}

// On one place, from Paddle's initial parameters, with the batches in order
// and the piecewise schedule Paddle's LRScheduler followed: Paddle's ten
// losses within 1e-4, and its parameters, moments and batch-norm statistics
// at the end (the persistables parex saved, in Paddle's tensor files).
TEST(CliProgramTrainTest, PaddleCnnReproducesPaddlesLossesAndParameters) {
  const std::string dir = ScratchDir("program_cnn");
  WritePaddleCnnFixtureData(dir);
  CliRun run = RunParex({"train",
                         "--program",
                         kFixture + "/main.pdmodel",
                         "--params",
                         kFixture + "/params",
                         "--data",
                         "x=x.npy",
                         "--data",
                         "label=label.npy",
                         "--batch",
                         "16",
                         "--no-shuffle",
                         "--places",
                         "cpu:1",
                         "--lr-schedule",
                         "piecewise:3,6:0.01,0.005,0.002",
                         "--metrics",
                         "m.jsonl",
                         "--save",
                         "trained",
                         "--no-progress"},
                        dir);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(
      run.out,
      HasSubstr("main.pdmodel' on 1 CPU place (allreduce), 160 train rows, "
                "1 epoch of 10 batches of 16"));
  EXPECT_THAT(run.out,
              HasSubstr("persistables to trained (Paddle's tensor files"));
  const std::vector<double> got = Lines(dir + "/m.jsonl", true);
  const std::vector<double> want = Lines(kFixture + "/losses.txt", false);
  ASSERT_EQ(got.size(), 10u);
  ASSERT_EQ(want.size(), 10u);
  for (int s = 0; s < 10; ++s) {
    EXPECT_NEAR(got[s], want[s], 1e-4 * std::abs(want[s])) << "step " << s + 1;
  }
  ExpectPaddlesFinalPersistables(dir + "/trained", kFixture);

  // Without the schedule the rate stays at 0.01: from step 4 on the losses
  // leave Paddle's (the schedule is what made them agree).
  CliRun constant = RunParex(
      {"train", "--program", kFixture + "/main.pdmodel", "--params",
       kFixture + "/params", "--data", "x=x.npy", "--data", "label=label.npy",
       "--batch", "16", "--no-shuffle", "--places", "cpu:1", "--metrics",
       "c.jsonl", "--save", "c", "--no-progress"},
      dir);
  ASSERT_EQ(constant.exit_code, 0) << constant.err;
  // ... and the run says so, naming the rate, with the flag that would help.
  EXPECT_THAT(constant.out, HasSubstr("learning rate   '"));
  EXPECT_THAT(constant.out, HasSubstr("' stays 0.01: no op of the program"));
  EXPECT_THAT(constant.out, HasSubstr("--lr-schedule"));
  EXPECT_THAT(run.out, Not(HasSubstr("stays")));
  const std::vector<double> flat = Lines(dir + "/c.jsonl", true);
  ASSERT_EQ(flat.size(), 10u);
  EXPECT_NEAR(flat[2], want[2], 1e-4 * std::abs(want[2]));
  EXPECT_GT(std::abs(flat[9] - want[9]), 1e-3 * std::abs(want[9]));
}

// Two places with --sync-batch-norm train as Paddle's one device did with
// the whole batch of 16: its ten losses and final persistables again. Without
// the flag each place's batch norm sees its own 8 rows, and the losses leave
// Paddle's.
TEST(CliProgramTrainTest, TwoPlacesWithSyncBatchNormReproducePaddle) {
  const std::string dir = ScratchDir("program_cnn_sync_bn");
  WritePaddleCnnFixtureData(dir);
  const std::vector<double> want = Lines(kFixture + "/losses.txt", false);
  for (bool sync : {true, false}) {
    std::vector<std::string> args = {"train",
                                     "--program",
                                     kFixture + "/main.pdmodel",
                                     "--params",
                                     kFixture + "/params",
                                     "--data",
                                     "x=x.npy",
                                     "--data",
                                     "label=label.npy",
                                     "--batch",
                                     "16",
                                     "--no-shuffle",
                                     "--places",
                                     "cpu:2",
                                     "--lr-schedule",
                                     "piecewise:3,6:0.01,0.005,0.002",
                                     "--metrics",
                                     sync ? "s.jsonl" : "u.jsonl",
                                     "--save",
                                     sync ? "s" : "u",
                                     "--no-progress"};
    if (sync) args.push_back("--sync-batch-norm");
    CliRun run = RunParex(args, dir);
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    const std::vector<double> got =
        Lines(dir + (sync ? "/s.jsonl" : "/u.jsonl"), true);
    ASSERT_EQ(got.size(), 10u);
    double worst = 0;
    for (int s = 0; s < 10; ++s) {
      worst = std::max(worst, std::abs(got[s] - want[s]) / std::abs(want[s]));
    }
    if (sync) {
      EXPECT_LT(worst, 1e-4);
      ExpectPaddlesFinalPersistables(dir + "/s", kFixture);
    } else {
      EXPECT_GT(worst, 1e-3);
    }
  }
}

// Across nodes too: two `parex node`s of one place each, launched together,
// synchronise their batch norms through Gloo and reproduce Paddle's losses.
TEST(CliProgramTrainTest, TwoNodesWithSyncBatchNormReproducePaddle) {
  const std::string dir = ScratchDir("program_cnn_sync_bn_nodes");
  WritePaddleCnnFixtureData(dir);
  const std::string topology = WriteTopology(dir, {1, 1});
  CliRun run = RunParex({"launch",
                         "--topology",
                         topology,
                         "--program",
                         kFixture + "/main.pdmodel",
                         "--params",
                         kFixture + "/params",
                         "--data",
                         "x=" + dir + "/x.npy",
                         "--data",
                         "label=" + dir + "/label.npy",
                         "--batch",
                         "16",
                         "--no-shuffle",
                         "--sync-batch-norm",
                         "--lr-schedule",
                         "piecewise:3,6:0.01,0.005,0.002",
                         "--metrics",
                         dir + "/n.jsonl",
                         "--save",
                         dir + "/n",
                         "--no-progress"},
                        dir);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::vector<double> got = Lines(dir + "/n.jsonl", true);
  const std::vector<double> want = Lines(kFixture + "/losses.txt", false);
  ASSERT_EQ(got.size(), 10u);
  for (int s = 0; s < 10; ++s) {
    EXPECT_NEAR(got[s], want[s], 1e-4 * std::abs(want[s])) << "step " << s + 1;
  }
  ExpectPaddlesFinalPersistables(dir + "/n", kFixture);
}

// A Transformer encoder classifier PaddlePaddle 2.6 built and trained
// (paddle_transformer_adam/make_fixture.py: embedding, layer_norm,
// multi-head attention from matmul_v2 / reshape2 / transpose2 / softmax, gelu,
// Adam with L2 regularisation, accuracy through top_k_v2). On one place and
// on two: Paddle's ten losses within 1e-4 relative, its final persistables,
// and the evaluation Paddle made of its final parameters.
TEST(CliProgramTrainTest, PaddleTransformerReproducesPaddleOnOneAndTwoPlaces) {
  const std::string fixture =
      std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_transformer_adam";
  const std::vector<double> want = Lines(fixture + "/losses.txt", false);
  const nlohmann::json paddle_eval =
      nlohmann::json::parse(ReadFile(fixture + "/eval/paddle.json"));
  // The data as two .npy files, then as one .npz archive (numpy's
  // savez_compressed), then as a directory of .npy files.
  const std::vector<std::vector<std::string>> datas = {
      {"--data", "tokens=" + fixture + "/data/tokens.npy", "--data",
       "label=" + fixture + "/data/label.npy"},
      {"--data", fixture + "/train.npz"},
      {"--data", fixture + "/data"}};
  for (const auto& [places, data] : std::vector<std::pair<std::string, int>>{
           {"cpu:1", 0}, {"cpu:2", 0}, {"cpu:2", 1}, {"cpu:1", 2}}) {
    SCOPED_TRACE(places + " data " + std::to_string(data));
    const std::string dir = ScratchDir(
        "program_transformer_" + places.substr(4) + "_" + std::to_string(data));
    std::vector<std::string> args = {"train", "--program",
                                     fixture + "/main.pdmodel", "--params",
                                     fixture + "/params"};
    args.insert(args.end(), datas[data].begin(), datas[data].end());
    args.insert(args.end(),
                {"--eval-data", "tokens=" + fixture + "/eval/tokens.npy",
                 "--eval-data", "label=" + fixture + "/eval/label.npy",
                 "--batch", "16", "--no-shuffle", "--places", places,
                 "--metrics", "m.jsonl", "--save", "trained", "--no-progress"});
    CliRun run = RunParex(args, dir);
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    std::vector<double> got;
    nlohmann::json eval;
    std::istringstream in(ReadFile(dir + "/m.jsonl"));
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains("eval")) {
        eval = j;
      } else {
        got.push_back(j["loss"].get<double>());
      }
    }
    ASSERT_EQ(got.size(), 10u);
    for (int s = 0; s < 10; ++s) {
      EXPECT_NEAR(got[s], want[s], 1e-4 * std::abs(want[s]))
          << "step " << s + 1;
    }
    ExpectPaddlesFinalPersistables(dir + "/trained", fixture);
    ASSERT_FALSE(eval.is_null()) << run.out;
    EXPECT_NEAR(eval["loss"].get<double>(), paddle_eval["loss"].get<double>(),
                1e-4 * paddle_eval["loss"].get<double>());
    EXPECT_NEAR(eval["accuracy"].get<double>(),
                paddle_eval["accuracy"].get<double>(), 1e-6);
    EXPECT_EQ(eval["rows"].get<int>(), 24);
  }
}

// --eval-data runs the program's forward pass (is_test: batch norm on its
// running statistics) on the trained parameters after each epoch: its last
// loss is the one the reference executor computes over the same rows from
// the saved persistables. --fetch adds a variable to every step's line.
TEST(CliProgramTrainTest, EvaluatesAfterEachEpochAndFetchesMore) {
  const std::string dir = ScratchDir("program_eval");
  WritePaddleCnnFixtureData(dir);
  CliRun run = RunParex({"train",
                         "--program",
                         kFixture + "/main.pdmodel",
                         "--params",
                         kFixture + "/params",
                         "--data",
                         "x=x.npy",
                         "--data",
                         "label=label.npy",
                         "--eval-data",
                         "x=x.npy",
                         "--eval-data",
                         "label=label.npy",
                         "--fetch",
                         "batch_norm_0.tmp_3",
                         "--batch",
                         "16",
                         "--epochs",
                         "2",
                         "--places",
                         "cpu:1",
                         "--metrics",
                         "m.jsonl",
                         "--save",
                         "trained",
                         "--no-progress"},
                        dir);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("  evaluation: loss "));
  EXPECT_THAT(run.out, HasSubstr(", batch_norm_0.tmp_3 "));
  std::istringstream lines(ReadFile(dir + "/m.jsonl"));
  std::string line;
  std::vector<nlohmann::json> evals;
  int steps = 0;
  while (std::getline(lines, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("eval")) {
      evals.push_back(j);
    } else {
      ++steps;
      EXPECT_TRUE(j["fetches"].contains("batch_norm_0.tmp_3")) << line;
    }
  }
  EXPECT_EQ(steps, 20);
  // A directory of NAME.npy files feeds the same as NAME=FILE pairs.
  std::filesystem::create_directories(dir + "/d");
  std::filesystem::copy_file(dir + "/x.npy", dir + "/d/x.npy");
  std::filesystem::copy_file(dir + "/label.npy", dir + "/d/label.npy");
  CliRun from_dir = RunParex(
      {"train", "--program", kFixture + "/main.pdmodel", "--params",
       kFixture + "/params", "--data", "d", "--batch", "16", "--places",
       "cpu:1", "--steps", "3", "--save", "d_out", "--no-progress"},
      dir);
  ASSERT_EQ(from_dir.exit_code, 0) << from_dir.err;
  EXPECT_THAT(from_dir.out, HasSubstr("160 train rows"));
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_EQ(evals[1]["rows"], 160);

  StatusOr<Program> main = Program::Load(kFixture + "/main.pdmodel");
  ASSERT_TRUE(main.ok());
  StatusOr<Program> test = Prune(*main, {"x", "label"}, {"mean_0.tmp_0"});
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  Scope scope;
  ASSERT_TRUE(LoadPersistables(*main, dir + "/trained", &scope).ok());
  StatusOr<Tensor> x = ReadNpy(dir + "/x.npy");
  StatusOr<Tensor> label = ReadNpy(dir + "/label.npy");
  ASSERT_TRUE(x.ok() && label.ok());
  ReferenceExecutor executor;
  auto out = executor.Run(*test, &scope, {{"x", *x}, {"label", *label}},
                          {"mean_0.tmp_0"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const double want = (*out)[0].data<float>()[0];
  EXPECT_NEAR(evals[1]["loss"].get<double>(), want, 1e-5 * std::abs(want));
}

// Mistakes in what a user brings: one line naming the option, variable or
// file, exit 2 (usage) or 1 (a file that cannot be read); nothing trained.
TEST(CliProgramTrainTest, BadProgramsAndDataAreNamed) {
  const std::string dir = ScratchDir("program_bad");
  WritePaddleCnnFixtureData(dir);
  {
    Tensor rows(DType::kInt64, {150, 1});
    for (int64_t i = 0; i < 150; ++i) rows.data<int64_t>()[i] = 0;
    ASSERT_TRUE(WriteNpy(dir + "/short.npy", rows).ok());
    Tensor f64(DType::kFP64, {160, 1, 12, 12});
    for (int64_t i = 0; i < f64.numel(); ++i) f64.data<double>()[i] = 0;
    ASSERT_TRUE(WriteNpy(dir + "/f64.npy", f64).ok());
    Tensor wide(DType::kFP32, {160, 1, 12, 13});
    for (int64_t i = 0; i < wide.numel(); ++i) wide.data<float>()[i] = 0;
    ASSERT_TRUE(WriteNpy(dir + "/wide.npy", wide).ok());
  }
  const std::string main = kFixture + "/main.pdmodel";
  const std::string params = kFixture + "/params";
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--data", "x=x.npy"},
       2,
       "reads 'label', which no --data label=FILE.npy feeds"},
      {{"--data", "x=x.npy", "--data", "label=short.npy"},
       2,
       "'label' has 150 rows, 'x' has 160"},
      {{"--data", "x=f64.npy", "--data", "label=label.npy"},
       2,
       "the file holds fp64, 'x' is fp32"},
      {{"--data", "x=wide.npy", "--data", "label=label.npy"},
       2,
       "do not fit 'x'"},
      {{"--data", "x=x.npy", "--data", "label=label.npy", "--data",
        "nosuch=x.npy"},
       2,
       "has no variable 'nosuch'"},
      {{"--data", "x=x.npy", "--data", "label=label.npy", "--loss", "nosuch"},
       2,
       "--loss: the program"},
      {{"--data", "x=x.npy", "--data", "label=label.npy", "--data",
        "conv2d_0.w_0=x.npy"},
       2,
       "is persistable (a parameter), not a feed"},
      {{"--data", "x=missing.npy", "--data", "label=label.npy"},
       1,
       "missing.npy"},
      {{"--data", "x", "--data", "label=label.npy"},
       2,
       "expected NAME=FILE.npy"},
      {{"--data", "x=x.npy", "--data", "label=label.npy", "--lr-schedule",
        "piecewise:3:0.1"},
       2,
       "one value more than boundaries"},
      {{"--data", "x=x.npy", "--data", "label=label.npy", "--lr-schedule",
        "linear:1"},
       2,
       "unknown schedule 'linear'"},
      {{"--data", "x=x.npy", "--data", "label=label.npy", "--lr", "0.1"},
       2,
       "--lr is for the examples"},
      {{"--data", "x=x.npy", "--data", "label=label.npy", "--fetch", "nosuch"},
       2,
       "--fetch: the program"},
      {{"--data", "x=x.npy", "--data", "label=label.npy", "--eval-data",
        "x=x.npy"},
       2,
       "--eval-data (the evaluation program)"},
      {{"--data", "x=x.npy", "--data", "label=label.npy", "--eval-data",
        "x=x.npy", "--eval-data", "label=short.npy"},
       2,
       "--eval-data: 'label' has 150 rows"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"train",    "--program", main,
                                     "--params", params,      "--no-progress",
                                     "--save",   "never"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CliRun run = RunParex(args, dir);
    EXPECT_EQ(run.exit_code, c.code) << c.message << "\n" << run.err;
    EXPECT_THAT(run.err, HasSubstr(c.message));
    EXPECT_THAT(run.out, Not(HasSubstr("epoch 1/"))) << c.message;
  }
  CliRun no_init =
      RunParex({"train", "--program", main, "--data", "x=x.npy"}, dir);
  EXPECT_EQ(no_init.exit_code, 2);
  EXPECT_THAT(no_init.err, HasSubstr("need --startup PROGRAM or --params DIR"));
  CliRun stray = RunParex({"train", "--data", "x=x.npy"}, dir);
  EXPECT_EQ(stray.exit_code, 2);
  EXPECT_THAT(stray.err, HasSubstr("go with --program"));
}

// `parex train` on a PaddlePaddle 2.6 training fixture of `steps` batches
// of `batch` rows (tests/apps/fixtures/NAME/make_fixture.py) channels-last
// by default (BuildStrategy::channels_last) and channels-first with
// --no-channels-last, on one place and on two with --sync-batch-norm: every
// run gives Paddle's losses within 1e-5 and its final persistables.
void ExpectPaddlesTrainingInEitherLayout(const std::string& name, int batch,
                                         size_t steps) {
  const std::string fixture = std::string(PAREX_TEST_FIXTURES_DIR) + "/" + name;
  const std::string dir = ScratchDir("program_" + name);
  const std::vector<double> want = Lines(fixture + "/losses.txt", false);
  ASSERT_EQ(want.size(), steps);
  for (const bool channels_last : {true, false}) {
    for (const int places : {1, 2}) {
      SCOPED_TRACE(std::string(channels_last ? "NHWC" : "NCHW") + " on " +
                   std::to_string(places));
      std::vector<std::string> args = {"train",
                                       "--program",
                                       fixture + "/main.pdmodel",
                                       "--params",
                                       fixture + "/params",
                                       "--data",
                                       "x=" + fixture + "/x.npy",
                                       "--data",
                                       "label=" + fixture + "/label.npy",
                                       "--batch",
                                       std::to_string(batch),
                                       "--no-shuffle",
                                       "--places",
                                       "cpu:" + std::to_string(places),
                                       "--metrics",
                                       "m.jsonl",
                                       "--save",
                                       "trained",
                                       "--no-progress"};
      if (places > 1) args.push_back("--sync-batch-norm");
      if (!channels_last) args.push_back("--no-channels-last");
      std::filesystem::remove(dir + "/m.jsonl");
      CliRun run = RunParex(args, dir);
      ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
      const std::vector<double> got = Lines(dir + "/m.jsonl", true);
      ASSERT_EQ(got.size(), steps);
      for (size_t s = 0; s < steps; ++s) {
        EXPECT_NEAR(got[s], want[s], 1e-5 * std::abs(want[s]))
            << "step " << s + 1;
      }
      ExpectPaddlesFinalPersistables(dir + "/trained", fixture);
    }
  }
}

// A residual network trained with SGD (paddle_resnet_sgd): a stem, a max
// pool, a residual block and a downsampling one whose shortcut is a strided
// 1x1 with a bias.
TEST(CliProgramTrainTest, ResidualNetworkTrainsAsPaddleInEitherLayout) {
  ExpectPaddlesTrainingInEitherLayout("paddle_resnet_sgd", 8, 6);
}

// What vision programs do around their convolutions, trained with momentum
// (paddle_mixed_cnn_momentum): "SAME" padding, a dilated grouped conv, leaky
// relu, hard swish, sigmoid, relu6, a concat along channels, a
// squeeze-and-excitation gate's [N,C,1,1] multiply, an exclusive average
// pool, a transposed conv, group norm, nearest interpolation, a mean over H
// and W: each op channels-last or given channels-first tensors, Paddle's
// numbers either way.
TEST(CliProgramTrainTest, MixedNetworkTrainsAsPaddleInEitherLayout) {
  ExpectPaddlesTrainingInEitherLayout("paddle_mixed_cnn_momentum", 4, 4);
}

// What the training rewrite makes of that program: every convolution,
// batch norm and pool and each of their gradient ops channels-last, the
// shortcut's bias added along NHWC's last axis, one transpose (the fed
// image in), and the loss left as it was.
TEST(CliProgramTrainTest, TrainingRewriteRunsTheWholeNetworkChannelsLast) {
  StatusOr<Program> program = Program::Load(
      std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_resnet_sgd/main.pdmodel");
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  proto::ProgramDesc desc = program->proto();
  int converted = 0, transposes = 0;
  RunChannelsLast(*program, {"mean_0.tmp_0"}, desc.mutable_blocks(0),
                  &converted, &transposes, /*training=*/true);
  const Program rewritten(std::move(desc));
  EXPECT_EQ(transposes, 1);
  std::map<std::string, int> nhwc, total;
  int bias_axis3 = 0;
  for (const auto& op : rewritten.global_block().ops()) {
    const std::string attr =
        op->type().rfind("batch_norm", 0) == 0 ? "data_layout" : "data_format";
    ++total[op->type()];
    StatusOr<std::string> layout = op->GetAttr<std::string>(attr);
    if (layout.ok() && *layout == "NHWC") ++nhwc[op->type()];
    StatusOr<int> axis = op->GetAttr<int>("axis");
    if (op->type().rfind("elementwise_add", 0) == 0 && axis.ok() &&
        *axis == 3) {
      ++bias_axis3;
    }
    if (op->type() == "transpose2") {
      EXPECT_EQ(op->FirstInput("X"), "x");
    }
  }
  for (const char* type : {"conv2d", "conv2d_grad", "batch_norm",
                           "batch_norm_grad", "pool2d", "pool2d_grad"}) {
    EXPECT_GT(total[type], 0) << type;
    EXPECT_EQ(nhwc[type], total[type]) << type;
  }
  EXPECT_EQ(total["conv2d"], 6);
  EXPECT_EQ(bias_axis3, 2);  // the shortcut's bias add and its gradient
  EXPECT_GT(converted, 40);
  const VarDesc* loss = rewritten.global_block().FindVar("mean_0.tmp_0");
  ASSERT_NE(loss, nullptr);
}

}  // namespace
}  // namespace parex::testing
