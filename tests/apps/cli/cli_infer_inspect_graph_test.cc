// `parex infer`, `parex inspect` and `parex graph` as a user runs them:
// normal use, bad arguments, missing and corrupt files (issue 6, acceptance
// 2); infer reproduces mnist_mlp's golden probabilities (acceptance 4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "apps/cli/npy.h"
#include "apps/datasets.h"
#include "graph/ir/program.h"
#include "kernels/io/model_io.h"
#include "tests/apps/cli/cli_test_util.h"
#include "tests/paddle_models.h"

namespace parex::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Model(const std::string& name) {
  return PaddleModelsDir() + "/" + name;
}

// The golden images as the model's input, written as image.npy into `dir`:
// pixels x/255*2-1, shaped [64, 1, 28, 28].
void WriteGoldenImages(const std::string& dir) {
  StatusOr<Tensor> raw =
      ReadIdxImages(Model("mnist_mlp/golden/images-64-idx3-ubyte"));
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  Tensor x(DType::kFP32, {raw->dim(0), 1, raw->dim(1), raw->dim(2)});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double pixel = raw->dtype() == DType::kUInt8 ? raw->data<uint8_t>()[i]
                                                       : raw->data<float>()[i];
    x.data<float>()[i] = static_cast<float>(pixel / 255.0 * 2 - 1);
  }
  ASSERT_TRUE(WriteNpy(dir + "/image.npy", x).ok());
}

// `parex infer` of mnist_mlp on the golden images (in scratch dir `dir`),
// on cpu:2 with `more` arguments; checks it ran and reported the output.
CliRun InferGoldenImages(const std::string& dir,
                         const std::vector<std::string>& more) {
  WriteGoldenImages(dir);
  std::vector<std::string> args = {
      "infer",    "--model", Model("mnist_mlp"), "--input", "image=image.npy",
      "--places", "cpu:2"};
  args.insert(args.end(), more.begin(), more.end());
  CliRun run = RunParex(args, dir);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out,
              HasSubstr("save_infer_model/scale_0.tmp_4: fp32 [64, 10]"));
  return run;
}

TEST(CliInferTest, MnistMlpReproducesTheGoldenProbabilities) {
  PAREX_REQUIRE_PADDLE_MODELS();
  const std::string dir = ScratchDir("infer");
  CliRun run = InferGoldenImages(dir, {"--output", "out"});
  ASSERT_EQ(run.exit_code, 0);
  const std::string out = dir + "/out/save_infer_model_scale_0.tmp_4.npy";
  EXPECT_THAT(run.out,
              HasSubstr("written to out/save_infer_model_scale_0.tmp_4.npy"));
  StatusOr<Tensor> probs = ReadNpy(out);
  ASSERT_TRUE(probs.ok()) << probs.status().ToString();
  const auto golden =
      ReadGoldenProbabilities(Model("mnist_mlp/golden/probabilities.csv"));
  ASSERT_EQ(golden.size(), 64u);
  ASSERT_EQ(probs->dims(), (Dims{64, 10}));
  double worst = 0;
  for (int r = 0; r < 64; ++r) {
    for (int c = 0; c < 10; ++c) {
      worst = std::max(
          worst, std::abs(probs->data<float>()[r * 10 + c] - golden[r][c]));
    }
  }
  EXPECT_LT(worst, 1e-4);
}

// What the fit_a_line executable did, as `parex infer`: Paddle's saved
// fit_a_line model on the 102 UCI housing test rows reaches the test MSE it
// printed (16.4071), its first predictions 13.5011 13.5695 13.6182.
TEST(CliInferTest, PaddleFitALineOnTheHousingTestRows) {
  PAREX_REQUIRE_PADDLE_MODELS();
  const std::string dir = ScratchDir("infer_fit_a_line");
  StatusOr<HousingData> housing =
      LoadUciHousing(std::string(PAREX_DATA_DIR) + "/boston_house_prices.csv");
  ASSERT_TRUE(housing.ok()) << housing.status().ToString();
  ASSERT_TRUE(WriteNpy(dir + "/x.npy", housing->test_x).ok());
  CliRun run = RunParex({"infer", "--model", Model("fit_a_line"), "--input",
                         "x=x.npy", "--output", "out"},
                        dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("scale_99.tmp_0: fp32 [102, 1]"));
  StatusOr<Tensor> pred = ReadNpy(dir + "/out/scale_99.tmp_0.npy");
  ASSERT_TRUE(pred.ok()) << pred.status().ToString();
  ASSERT_EQ(pred->numel(), 102);
  double mse = 0;
  for (int64_t i = 0; i < pred->numel(); ++i) {
    const double d = pred->data<float>()[i] - housing->test_y.data<float>()[i];
    mse += d * d;
  }
  EXPECT_NEAR(mse / pred->numel(), 16.4071, 1e-4);
  EXPECT_NEAR(pred->data<float>()[0], 13.5011, 1e-4);
  EXPECT_NEAR(pred->data<float>()[1], 13.5695, 1e-4);
  EXPECT_NEAR(pred->data<float>()[2], 13.6182, 1e-4);
  // The 102 rows ran in 6 chunks of 17 (--chunk-rows 32 by default), as
  // one run of them does (--chunk-rows 0).
  EXPECT_THAT(run.out, HasSubstr("(17 rows a run)"));
  CliRun whole = RunParex({"infer", "--model", Model("fit_a_line"), "--input",
                           "x=x.npy", "--output", "whole", "--chunk-rows", "0"},
                          dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_THAT(whole.out, ::testing::Not(HasSubstr("rows a run")));
  StatusOr<Tensor> at_once = ReadNpy(dir + "/whole/scale_99.tmp_0.npy");
  ASSERT_TRUE(at_once.ok()) << at_once.status().ToString();
  ASSERT_EQ(at_once->numel(), 102);
  for (int64_t i = 0; i < 102; ++i) {
    EXPECT_NEAR(pred->data<float>()[i], at_once->data<float>()[i], 1e-6) << i;
  }
  CliRun refused = RunParex({"infer", "--model", Model("fit_a_line"), "--input",
                             "x=x.npy", "--chunk-rows", "-1"},
                            dir);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("--chunk-rows"));
}

// --bench N: after the first run (its outputs reported as ever), N timed
// runs; the line holds the run count, the rows, a median at most the p99,
// the rows a second at the median, and the peak memory. N below 1 or not a
// number is a usage error naming the option.
TEST(CliInferTest, BenchTimesRunsAfterTheFirst) {
  PAREX_REQUIRE_PADDLE_MODELS();
  const std::string dir = ScratchDir("infer_bench");
  CliRun run = InferGoldenImages(dir, {"--bench", "7"});
  ASSERT_EQ(run.exit_code, 0);
  std::smatch m;
  const std::regex line(
      "bench: 7 runs of 64 rows: median ([0-9.]+) ms, p99 ([0-9.]+) ms, "
      "([0-9.]+) rows/s; peak RSS ([0-9.]+) MiB");
  ASSERT_TRUE(std::regex_search(run.out, m, line)) << run.out;
  const double median = std::stod(m[1]), p99 = std::stod(m[2]),
               rows_per_s = std::stod(m[3]), rss = std::stod(m[4]);
  EXPECT_GT(median, 0);
  EXPECT_LE(median, p99);
  // The median is printed to 0.001 ms.
  EXPECT_NEAR(rows_per_s, 64 / (median / 1e3),
              rows_per_s * 0.0006 / median + 1);
  EXPECT_GT(rss, 1);
  for (const char* bad : {"0", "-3", "many"}) {
    CliRun refused = RunParex({"infer", "--model", Model("mnist_mlp"),
                               "--input", "image=image.npy", "--bench", bad},
                              dir);
    EXPECT_EQ(refused.exit_code, 2) << bad;
    EXPECT_THAT(refused.err, HasSubstr("--bench")) << bad;
  }
}

// --trace-from K --trace-runs M: the trace records runs K..K+M-1 (0 the
// first, --bench's 1..N), cut at the last run; a K past the last run is a
// usage error naming the option, before any work.
TEST(CliInferTest, TraceRecordsTheRunsItIsToldOf) {
  PAREX_REQUIRE_PADDLE_MODELS();
  const std::string dir = ScratchDir("infer_trace_runs");
  struct Case {
    const char* from;
    const char* runs;
    int steps;
  };
  for (const Case& c : {Case{"0", "1", 1}, Case{"2", "3", 3}, Case{"4", "9", 2},
                        Case{"5", "1", 1}}) {
    CliRun run = InferGoldenImages(
        dir, {"--bench", "5", "--trace", "t.json", "--trace-from", c.from,
              "--trace-runs", c.runs});
    ASSERT_EQ(run.exit_code, 0) << c.from << ": " << run.err;
    EXPECT_THAT(run.out, HasSubstr("trace t.json: " + std::to_string(c.steps) +
                                   " traced steps"))
        << c.from << " " << c.runs;
    EXPECT_NO_THROW({
      const nlohmann::json trace =
          nlohmann::json::parse(ReadFile(dir + "/t.json"));
      EXPECT_FALSE(trace.at("traceEvents").empty()) << c.from;
    });
  }
  fs::remove(dir + "/t.json");
  const std::vector<std::string> infer = {
      "infer",   "--model", Model("mnist_mlp"), "--input", "image=image.npy",
      "--trace", "t.json"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), infer.begin(), infer.end());
    return more;
  };
  CliRun late = RunParex(with({"--bench", "2", "--trace-from", "3"}), dir);
  EXPECT_EQ(late.exit_code, 2);
  EXPECT_THAT(late.err, HasSubstr("--trace-from 3"));
  EXPECT_FALSE(fs::exists(dir + "/t.json"));
  for (const char* bad : {"0", "-1", "x"}) {
    CliRun refused = RunParex(with({"--trace-runs", bad}), dir);
    EXPECT_EQ(refused.exit_code, 2) << bad;
    EXPECT_THAT(refused.err, HasSubstr("--trace-runs")) << bad;
  }
}

// A batch of fewer rows than places runs on as many places as it has rows,
// and gives what one place gives.
TEST(CliInferTest, OneRowOnTwoPlacesRunsOnOne) {
  PAREX_REQUIRE_PADDLE_MODELS();
  const std::string dir = ScratchDir("infer_one_row");
  StatusOr<HousingData> housing =
      LoadUciHousing(std::string(PAREX_DATA_DIR) + "/boston_house_prices.csv");
  ASSERT_TRUE(housing.ok()) << housing.status().ToString();
  ASSERT_TRUE(WriteNpy(dir + "/x.npy", housing->test_x.Slice(0, 1)).ok());
  std::vector<Tensor> preds;
  for (const char* places : {"cpu:2", "cpu:1"}) {
    const std::string out = std::string("out_") + places[4];
    CliRun run = RunParex({"infer", "--model", Model("fit_a_line"), "--input",
                           "x=x.npy", "--output", out, "--places", places},
                          dir);
    ASSERT_EQ(run.exit_code, 0) << places << ": " << run.err;
    EXPECT_THAT(run.out, HasSubstr("on 1 CPU place,"));
    StatusOr<Tensor> pred = ReadNpy(dir + "/" + out + "/scale_99.tmp_0.npy");
    ASSERT_TRUE(pred.ok()) << pred.status().ToString();
    ASSERT_EQ(pred->dims(), (Dims{1, 1}));
    preds.push_back(*pred);
  }
  EXPECT_EQ(preds[0].data<float>()[0], preds[1].data<float>()[0]);
  EXPECT_NEAR(preds[0].data<float>()[0], 13.5011, 1e-4);
}

TEST(CliInferTest, SimpleModelFromACombinedParameterFileWithATrace) {
  PAREX_REQUIRE_PADDLE_MODELS();
  const std::string dir = ScratchDir("infer_simple");
  Tensor ones(DType::kFP32, {1, 3, 224, 224});
  for (int64_t i = 0; i < ones.numel(); ++i) ones.data<float>()[i] = 1;
  ASSERT_TRUE(WriteNpy(dir + "/ones.npy", ones).ok());
  CliRun run =
      RunParex({"infer", "--model", Model("simple_model/model.pdmodel"),
                "--params", Model("simple_model/model.pdiparams"), "--input",
                "image=ones.npy", "--trace", "t.json"},
               dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The README's reference: mean 0.446896, max 1.757295.
  EXPECT_THAT(run.out, HasSubstr("fp32 [1, 32, 112, 112]  min "));
  EXPECT_THAT(run.out, HasSubstr("max 1.7573, mean 0.446896"));
  EXPECT_THAT(run.out, HasSubstr("trace t.json: 1 traced steps"));
  EXPECT_NO_THROW({
    const nlohmann::json trace =
        nlohmann::json::parse(ReadFile(dir + "/t.json"));
    EXPECT_TRUE(trace.contains("traceEvents"));
  });
}

TEST(CliInferTest, BadInputsAndModels) {
  PAREX_REQUIRE_PADDLE_MODELS();
  const std::string dir = ScratchDir("infer_bad");
  WriteGoldenImages(dir);
  { std::ofstream(dir + "/corrupt.npy") << "not an array"; }
  fs::create_directories(dir + "/broken");
  { std::ofstream(dir + "/broken/__model__") << "junk"; }
  const std::string mlp = Model("mnist_mlp");
  ExpectFailures(
      {
          {{"infer", "--model", mlp}, 2, "--input is required"},
          {{"infer", "--model", mlp, "--input", "image"},
           2,
           "expected NAME=FILE.npy"},
          {{"infer", "--model", mlp, "--input", "pixels=image.npy"},
           2,
           "the model has no feed 'pixels' (its feeds: image)"},
          {{"infer", "--model", mlp, "--input", "image=missing.npy"},
           1,
           "cannot open 'missing.npy'"},
          {{"infer", "--model", mlp, "--input", "image=corrupt.npy"},
           1,
           "'corrupt.npy': not a NumPy .npy file"},
          {{"infer", "--model", "nowhere", "--input", "image=image.npy"},
           1,
           "'nowhere' does not exist"},
          {{"infer", "--model", "broken", "--input", "image=image.npy"},
           1,
           "broken/__model__"},
      },
      dir);
  // A wrong shape names the feed.
  Tensor flat(DType::kFP32, {4, 784});
  ASSERT_TRUE(WriteNpy(dir + "/flat.npy", flat).ok());
  CliRun run =
      RunParex({"infer", "--model", mlp, "--input", "image=flat.npy"}, dir);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("image"));
}

TEST(CliInspectTest, PaddleModelsAndAnUnknownOp) {
  PAREX_REQUIRE_PADDLE_MODELS();
  CliRun run = RunParex({"inspect", Model("mnist_mlp")}, ScratchDir("inspect"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("program version  2001000 (Paddle 2.1.0)"));
  EXPECT_THAT(run.out, HasSubstr("feeds            image"));
  EXPECT_THAT(run.out,
              HasSubstr("fetches          save_infer_model/scale_0.tmp_4"));
  EXPECT_TRUE(std::regex_search(run.out, std::regex("\\n +mul +3\\n")))
      << run.out;
  // The bytes of the parameters as loaded, not as declared.
  Scope scope;
  StatusOr<InferenceModel> loaded =
      LoadInferenceModel(Model("mnist_mlp"), &scope);
  ASSERT_TRUE(loaded.ok());
  double bytes = 0;
  for (const std::string& name : PersistableTensorNames(loaded->program)) {
    bytes += scope.FindVar(name)->GetTensor()->bytes();
  }
  char expected[64];
  std::snprintf(expected, sizeof(expected), "6 persistable tensors, %.1f KiB",
                bytes / 1024);
  EXPECT_THAT(run.out, HasSubstr(expected));
  EXPECT_THAT(run.out, HasSubstr("parex runs every op"));

  CliRun old =
      RunParex({"inspect", Model("fit_a_line")}, ScratchDir("inspect"));
  ASSERT_EQ(old.exit_code, 0) << old.err;
  EXPECT_THAT(old.out, HasSubstr("program version  none"));

  // A program with an op parex does not know: listed, not fatal.
  const std::string dir = ScratchDir("inspect_unknown");
  Program p;
  p.global_block().AppendOp("my_custom_op");
  p.global_block().AppendOp("my_custom_op");
  ASSERT_TRUE(p.Save(dir + "/custom.pdmodel").ok());
  CliRun custom = RunParex({"inspect", "custom.pdmodel"}, dir);
  ASSERT_EQ(custom.exit_code, 0) << custom.err;
  EXPECT_THAT(custom.out, HasSubstr("ops parex cannot run: 1"));
  EXPECT_THAT(custom.out, HasSubstr("my_custom_op (unknown op type, 2x)"));

  { std::ofstream(dir + "/junk.pdmodel") << "\x08\x96\x01 junk"; }
  CliRun junk = RunParex({"inspect", "junk.pdmodel"}, dir);
  EXPECT_EQ(junk.exit_code, 1);
  EXPECT_THAT(junk.err, HasSubstr("junk.pdmodel"));
  CliRun none = RunParex({"inspect"}, dir);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("path is required"));
  CliRun empty_dir = RunParex({"inspect", "."}, ScratchDir("inspect_empty"));
  EXPECT_EQ(empty_dir.exit_code, 1);
  EXPECT_THAT(empty_dir.err, HasSubstr("holds no __model__ and no *.pdmodel"));
}

// inspect checks the parameter files as a load would: every missing file of
// a one-file-per-var model is listed (not just the first), a combined file
// that does not load is named with its fault; the program is still
// described and the exit status stays 0 (a report, as for unknown ops).
TEST(CliInspectTest, ListsMissingAndBrokenParameterFiles) {
  const std::string dir = ScratchDir("inspect_params");
  CliRun train = RunParex(
      {"train", "--model", "fit_a_line", "--epochs", "1", "--save", "m",
       "--no-progress", std::string("--data-dir=") + PAREX_DATA_DIR},
      dir);
  ASSERT_EQ(train.exit_code, 0) << train.err;
  CliRun whole = RunParex({"inspect", "m"}, dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_THAT(
      whole.out,
      HasSubstr("parameter files  all present (one file per var in m)"));
  EXPECT_THAT(whole.out, HasSubstr("parex runs every op of this program\n"));

  std::vector<std::string> params;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/m")) {
    if (e.path().filename() != "__model__")
      params.push_back(e.path().filename());
  }
  ASSERT_GE(params.size(), 2u);
  std::sort(params.begin(), params.end());
  std::filesystem::remove(dir + "/m/" + params[0]);
  std::filesystem::remove(dir + "/m/" + params[1]);
  CliRun missing = RunParex({"inspect", "m"}, dir);
  ASSERT_EQ(missing.exit_code, 0) << missing.err;
  EXPECT_THAT(missing.out,
              HasSubstr("parameter files  2 problems (one file per var in m)"));
  EXPECT_THAT(missing.out, HasSubstr("missing m/" + params[0]));
  EXPECT_THAT(missing.out, HasSubstr("missing m/" + params[1]));
  EXPECT_THAT(missing.out, HasSubstr("(once its parameter files are there)"));

  // A combined file cut short.
  StatusOr<Program> program = Program::Load(dir + "/m/__model__");
  ASSERT_TRUE(program.ok());
  ASSERT_TRUE(program->Save(dir + "/c.pdmodel").ok());
  { std::ofstream(dir + "/c.pdiparams") << std::string(10, '\0'); }
  CliRun cut = RunParex({"inspect", "c.pdmodel"}, dir);
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  EXPECT_THAT(cut.out, HasSubstr("1 problem (combined file c.pdiparams)"));
  EXPECT_THAT(cut.out, HasSubstr("c.pdiparams"));
}

// A training program saved by PaddlePaddle: graph finds the loss Fluid
// marked (op_role Loss) and lays out its all-reduces; --loss names another
// var; a var the program lacks is a usage error naming it.
TEST(CliGraphTest, ATrainingProgramFileUsesItsMarkedLoss) {
  const std::string dir = ScratchDir("graph_training");
  const std::string program = std::string(PAREX_TEST_FIXTURES_DIR) +
                              "/paddle_mlp_momentum/main.pdmodel";
  CliRun marked =
      RunParex({"graph", program, "--places", "cpu:2", "-o", "g.json"}, dir);
  ASSERT_EQ(marked.exit_code, 0) << marked.err;
  EXPECT_THAT(marked.out,
              HasSubstr("(training program, loss mean_0.tmp_0) on 2 places"));
  EXPECT_THAT(marked.out, HasSubstr("4 all_reduce"));
  EXPECT_THAT(marked.out, HasSubstr("2 scale_loss_grad"));
  CliRun named = RunParex({"graph", program, "--places", "cpu:2", "--mode",
                           "reduce", "--loss", "mean_0.tmp_0", "-o", "g.json"},
                          dir);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_THAT(named.out, HasSubstr(" reduce"));
  CliRun bad =
      RunParex({"graph", program, "--loss", "nosuch", "-o", "g.json"}, dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("no variable 'nosuch'"));
}

TEST(CliGraphTest, DotAndJsonOfTrainingAndInferencePrograms) {
  const std::string dir = ScratchDir("graph");
  CliRun dot = RunParex({"graph", "--model", "fashion_cnn", "--places", "cpu:2",
                         "--mode", "reduce", "-o", "cnn.dot"},
                        dir);
  ASSERT_EQ(dot.exit_code, 0) << dot.err;
  EXPECT_THAT(dot.out,
              HasSubstr("fashion_cnn (training program) on 2 places (reduce)"));
  EXPECT_THAT(dot.out, HasSubstr(" reduce"));
  EXPECT_EQ(ReadFile(dir + "/cnn.dot").rfind("digraph", 0), 0u);

  CliRun json = RunParex(
      {"graph", "--model", "digits_mlp", "--format", "json", "-o", "mlp.out"},
      dir);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(
      json.out,
      HasSubstr(
          "48 op handles (4 all_reduce, 42 computation, 2 scale_loss_grad)"));
  nlohmann::json doc = nlohmann::json::parse(ReadFile(dir + "/mlp.out"));
  EXPECT_EQ(doc["ops"].size(), 48u);

  if (HavePaddleModels()) {
    CliRun inference =
        RunParex({"graph", Model("mnist_mlp"), "-o", "mnist.json"}, dir);
    ASSERT_EQ(inference.exit_code, 0) << inference.err;
    EXPECT_THAT(inference.out, HasSubstr("on 2 places"));
  }

  ExpectFailures(
      {
          {{"graph", "--model", "digits_mlp"}, 2, "--output is required"},
          {{"graph", "-o", "x.dot"}, 2, "name a program FILE or --model"},
          {{"graph", "a.pdmodel", "--model", "digits_mlp", "-o", "x.dot"},
           2,
           "not both or neither"},
          {{"graph", "--model", "digits_mlp", "-o", "x.txt"},
           2,
           "give --format dot|json"},
          {{"graph", "--model", "digits_mlp", "--format", "svg", "-o", "x.svg"},
           2,
           "--format must be dot or json"},
          {{"graph", "--model", "digits_mlp", "--mode", "tree", "-o", "x.dot"},
           2,
           "--mode must be allreduce or reduce"},
          {{"graph", "missing.pdmodel", "-o", "x.dot"},
           1,
           "'missing.pdmodel' does not exist"},
          {{"graph", "--model", "digits_mlp", "-o", "/nonexistent/dir/x.dot"},
           1,
           "/nonexistent/dir/x.dot"},
      },
      dir);
}

}  // namespace
}  // namespace parex::testing
