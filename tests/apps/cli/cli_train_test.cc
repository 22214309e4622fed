// `parex train` as a user runs it: normal use, a traced 2-place run
// (issue 6, acceptance 3), and bad arguments or data with their messages
// and exit codes (acceptance 2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "graph/builder/examples.h"
#include "graph/ir/program.h"
#include "tests/apps/cli/cli_test_util.h"

namespace parex::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kData = std::string("--data-dir=") + PAREX_DATA_DIR;

TEST(CliTrainTest, TrainsTheDigitsMlpAndSavesIt) {
  const std::string dir = ScratchDir("train");
  CliRun run =
      RunParex({"train", "--epochs", "3", "--save", "model", kData}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("digits_mlp on 2 CPU places (allreduce)"));
  EXPECT_THAT(run.out, HasSubstr("epoch 3/3: loss "));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      run.out, m, std::regex("test accuracy +([0-9.]+) on 360 rows")))
      << run.out;
  EXPECT_GT(std::stod(m[1]), 0.85);  // 0.95 after the default 20 epochs
  EXPECT_THAT(run.out, HasSubstr("throughput"));
  // One process: its steps are compute and feeding, no collective.
  EXPECT_THAT(run.out, ::testing::ContainsRegex(
                           "step account +[0-9.]+ ms a step over 1215 steps: "
                           "compute [0-9.]+ ms, gradient collectives 0.000 ms "
                           "\\(waiting for peers 0.000 ms\\), other "
                           "collectives 0.000 ms, feeding [0-9.]+ ms"));
  EXPECT_THAT(run.out, HasSubstr("model saved to  model"));
  EXPECT_TRUE(fs::exists(fs::path(dir) / "model" / "__model__"));
  // Not a terminal: plain lines, no carriage returns.
  EXPECT_THAT(run.out, Not(HasSubstr("\r")));
  EXPECT_EQ(run.err, "");

  // The saved model is an inference program the other subcommands read.
  CliRun inspect = RunParex({"inspect", "model"}, dir);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_THAT(inspect.out, HasSubstr("feeds            image"));
  EXPECT_THAT(inspect.out, HasSubstr("parex runs every op of this program"));
}

// --save-programs writes the example's training programs (what
// tests/apps/fixtures/run_in_paddle.py runs in Paddle) before training.
TEST(CliTrainTest, SaveProgramsWritesTheTrainingPrograms) {
  const std::string dir = ScratchDir("train_save_programs");
  CliRun run =
      RunParex({"train", "--model", "fit_a_line", "--epochs", "1", "--steps",
                "1", "--save-programs", "programs/p", kData},
               dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExampleOptions options;
  options.random_seed = 1;
  StatusOr<ExampleProgram> built =
      BuildExample(ExampleKind::kFitALine, options);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  for (const auto& [file, expected] :
       {std::pair<std::string, const Program*>{"main.pdmodel", &built->main},
        {"startup.pdmodel", &built->startup}}) {
    StatusOr<Program> saved = Program::Load(dir + "/programs/p/" + file);
    ASSERT_TRUE(saved.ok()) << file << ": " << saved.status().ToString();
    std::vector<std::string> got, want;
    for (const auto& op : saved->global_block().ops())
      got.push_back(op->type());
    for (const auto& op : expected->global_block().ops())
      want.push_back(op->type());
    EXPECT_EQ(got, want) << file;
    EXPECT_FALSE(got.empty()) << file;
  }
}

TEST(CliTrainTest, ReduceModeOnThreePlacesVerbose) {
  CliRun run = RunParex({"train", "--model", "fit_a_line", "--places", "cpu:3",
                         "--mode", "reduce", "--epochs", "30", "-v", kData},
                        ScratchDir("train_reduce"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // -v logs what the executor compiled.
  EXPECT_THAT(run.err, HasSubstr("on 3 places"));
  EXPECT_THAT(run.err, HasSubstr("op actors"));
  EXPECT_THAT(run.out, HasSubstr("fit_a_line on 3 CPU places (reduce)"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.out, m, std::regex("test MSE +([0-9.]+)")))
      << run.out;
  EXPECT_LT(std::stod(m[1]), 40.0);  // the label variance is ~80
  EXPECT_TRUE(fs::exists(fs::path(PAREX_TEST_TMP_DIR) / "cli_train_reduce" /
                         "parex-fit_a_line" / "__model__"));
}

// Simulated asynchronous places from the command line: every op handle's
// work runs on a stream actor, and the model trains as on CPU places.
TEST(CliTrainTest, TrainsOnSimulatedAsynchronousPlaces) {
  CliRun run =
      RunParex({"train", "--places", "sim:2", "--epochs", "2", "-v", kData},
               ScratchDir("train_sim"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("digits_mlp on 2 simulated places"));
  EXPECT_THAT(run.err, HasSubstr("4 stream actors"));
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(run.out, m, std::regex("test accuracy +([0-9.]+)")))
      << run.out;
  EXPECT_GT(std::stod(m[1]), 0.8);
}

// Every op handle of every traced step has a complete span; every message's
// send is paired with its receipt; the summary gives the overlap figure.
TEST(CliTrainTest, TracedTwoPlaceRun) {
  const std::string dir = ScratchDir("trace");
  CliRun run = RunParex({"train", "--epochs", "1", "--trace", "trace.json",
                         "--trace-steps", "6", kData},
                        dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("trace           trace.json"));
  EXPECT_TRUE(std::regex_search(
      run.out,
      std::regex(
          "trace summary   6 traced steps, [0-9.]+ ms: compute [0-9.]+ ms, "
          "collectives [0-9.]+ ms \\([0-9]+% hidden behind compute, [0-9]+% "
          "behind backward\\), "
          "scheduler idle [0-9]+%")))
      << run.out;
  nlohmann::json doc = nlohmann::json::parse(ReadFile(dir + "/trace.json"));
  std::map<int64_t, std::set<int64_t>> nodes_by_step;
  std::set<int64_t> all_nodes;
  std::map<uint64_t, int> sends, receipts;
  std::set<std::string> tracks;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") {
      ASSERT_TRUE(e.contains("dur"));
      EXPECT_GE(e["dur"].get<double>(), 0);
      const int64_t node = e["args"]["node"];
      EXPECT_TRUE(nodes_by_step[e["args"]["step"]].insert(node).second)
          << "two spans of node " << node;
      all_nodes.insert(node);
    } else if (e["ph"] == "s") {
      ++sends[e["id"]];
    } else if (e["ph"] == "f") {
      ++receipts[e["id"]];
    } else if (e["ph"] == "M" && e["name"] == "thread_name") {
      tracks.insert(e["args"]["name"]);
    }
  }
  ASSERT_EQ(nodes_by_step.size(), 6u);
  // The digits MLP on 2 places: 48 op handles, plus the 2 fetches.
  EXPECT_EQ(all_nodes.size(), 50u);
  for (const auto& [step, nodes] : nodes_by_step) {
    EXPECT_EQ(nodes, all_nodes) << "step " << step;
  }
  EXPECT_FALSE(sends.empty());
  EXPECT_EQ(sends, receipts);
  for (const auto& [id, n] : sends) EXPECT_EQ(n, 1) << "flow " << id;
  EXPECT_GE(tracks.size(), 3u);  // compute per place, communication
}

// --trace-from leaves the first steps out: the trace holds exactly steps
// [from, from + trace-steps).
TEST(CliTrainTest, TraceFromStartsTheTraceLater) {
  const std::string dir = ScratchDir("trace_from");
  CliRun run =
      RunParex({"train", "--steps", "8", "--trace", "t.json", "--trace-from",
                "3", "--trace-steps", "2", "--no-progress", kData},
               dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("trace summary   2 traced steps"));
  nlohmann::json doc = nlohmann::json::parse(ReadFile(dir + "/t.json"));
  std::set<int64_t> steps;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") steps.insert(e["args"]["step"].get<int64_t>());
  }
  EXPECT_EQ(steps, (std::set<int64_t>{3, 4}));
}

TEST(CliTrainTest, BadArgumentsAndData) {
  ExpectFailures(
      {
          {{"train", "--model", "resnet"}, 2, "unknown example model 'resnet'"},
          {{"train", "--places", "cpu:0"}, 2, "N must be at least 1"},
          {{"train", "--places", "tpu:2"}, 2, "bad --places 'tpu:2'"},
          {{"train", "--mode", "ring"},
           2,
           "--mode must be allreduce or reduce"},
          {{"train", "--places", "cpu:4", "--batch", "3"},
           2,
           "--batch 3 is smaller than the 4 places"},
          {{"train", "--epochs", "many"}, 2, "--epochs"},
          {{"train", "--no-such-flag"}, 2, "--no-such-flag"},
          {{"train", "--data-dir", "/nonexistent/data"},
           1,
           "/nonexistent/data"},
          {{"train", "--model", "fashion_mlp", "--fashion-dir",
            "/nonexistent/f"},
           1,
           "/nonexistent/f"},
          {{"train", "--model", "fit_a_line", "--lr", "1e9", "--epochs", "3",
            kData},
           1,
           "training diverged"},
          {{}, 2, "Subcommands:"},
          {{"fly"}, 2, "unknown command 'fly'"},
      },
      ScratchDir("bad_train"));
}

TEST(CliTrainTest, HelpListsTheSubcommands) {
  CliRun run = RunParex({"--help"}, ScratchDir("help"));
  EXPECT_EQ(run.exit_code, 0);
  for (const char* sub : {"train", "infer", "inspect", "graph"}) {
    EXPECT_THAT(run.out, HasSubstr(sub));
  }
  CliRun train_help = RunParex({"train", "--help"}, ScratchDir("help"));
  EXPECT_EQ(train_help.exit_code, 0);
  EXPECT_THAT(train_help.out, HasSubstr("--places"));
  EXPECT_THAT(train_help.out, HasSubstr("--trace"));
}

}  // namespace
}  // namespace parex::testing

namespace parex::testing {
namespace {

// parex plot draws a --metrics file through gnuplot: an SVG holding both
// curves, a PNG; bad files and outputs are named.
TEST(CliPlotTest, DrawsTheLossAndAccuracyOfAMetricsFile) {
  const std::string dir = ScratchDir("plot");
  CliRun train = RunParex({"train", "--steps", "40", "--metrics", "m.jsonl",
                           "--no-progress", "--save", "m", kData},
                          dir);
  ASSERT_EQ(train.exit_code, 0) << train.err;
  CliRun svg = RunParex(
      {"plot", "m.jsonl", "-o", "curve.svg", "--title", "digits"}, dir);
  ASSERT_EQ(svg.exit_code, 0) << svg.err;
  EXPECT_THAT(svg.out, HasSubstr("plotted 40 steps of m.jsonl into curve.svg"));
  const std::string picture = ReadFile(dir + "/curve.svg");
  EXPECT_THAT(picture, HasSubstr("<svg"));
  EXPECT_THAT(picture, HasSubstr("train accuracy"));
  EXPECT_THAT(picture, HasSubstr("digits"));
  CliRun png = RunParex({"plot", "m.jsonl", "-o", "curve.png"}, dir);
  ASSERT_EQ(png.exit_code, 0) << png.err;
  EXPECT_EQ(ReadFile(dir + "/curve.png").substr(1, 3), "PNG");
  // Quotes in a title or a path are text to gnuplot, never a command: the
  // picture is drawn with the title as given and nothing else runs.
  const std::string title = "it's \"q\"'; system('touch pwned'); x='";
  CliRun quoted =
      RunParex({"plot", "m.jsonl", "-o", "it's.svg", "--title", title}, dir);
  ASSERT_EQ(quoted.exit_code, 0) << quoted.err;
  EXPECT_THAT(ReadFile(dir + "/it's.svg"), HasSubstr("system("));
  EXPECT_FALSE(fs::exists(dir + "/pwned"));
  {
    std::ofstream(dir + "/bad.jsonl")
        << "{\"step\": 1, \"loss\": 2}\nnot json\n";
  }
  ExpectFailures(
      {{{"plot", "bad.jsonl", "-o", "b.svg"},
        1,
        "'bad.jsonl' line 2: not JSON"},
       {{"plot", "m.jsonl", "-o", "b.pdf"}, 2, "must be .svg or .png"},
       {{"plot", "nothere.jsonl", "-o", "b.svg"}, 2, "nothere.jsonl"},
       {{"plot", "m.jsonl", "-o", "no/such/dir/b.svg"},
        1,
        "no/such/dir/b.svg"}},
      dir);
}

}  // namespace
}  // namespace parex::testing
