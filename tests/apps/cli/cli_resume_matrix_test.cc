// Issue 28, the resume matrix through the command line: the CNN
// PaddlePaddle 2.6 made (tests/apps/fixtures/paddle_cnn_bn_adam: conv2d,
// batch_norm, pool2d, Adam) with a piecewise learning-rate schedule, in
// {AllReduce, Reduce} x {1, 2, 3 places} x {1 node, 2 nodes}: 10 steps
// checkpointed at the end, against 5 steps checkpointed and resumed to 10.
// Every file of the two final checkpoints (every persistable: parameters,
// Adam's moments and beta powers, batch norm's statistics, the schedule's
// counter; and where training stood) is equal byte for byte. The in-process
// matrix (sliced optimizers, memory_optimize, SGD / Momentum / lazy Adam
// over sparse rows) is tests/actors/checkpoint_resume_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/cli/npy.h"
#include "kernels/io/tensor_io.h"
#include "tests/apps/cli/cli_test_util.h"

namespace parex::testing {
namespace {

namespace fs = std::filesystem;

const std::string kFixture =
    std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_cnn_bn_adam";

// The fixture's ten batches of 16 rows as x.npy and label.npy in `dir`.
void WriteFixtureData(const std::string& dir) {
  for (const char* name : {"x", "label"}) {
    std::vector<Tensor> parts(10);
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(LoadTensorFile(
                      kFixture + "/batches/" + name + "_" + std::to_string(i),
                      &parts[i])
                      .ok());
    }
    Dims dims = parts[0].dims();
    dims[0] *= 10;
    Tensor all(parts[0].dtype(), dims);
    char* out = static_cast<char*>(all.raw_data());
    for (const Tensor& p : parts) {
      std::memcpy(out, p.raw_data(), p.bytes());
      out += p.bytes();
    }
    ASSERT_TRUE(WriteNpy(dir + "/" + name + ".npy", all).ok());
  }
}

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
  EXPECT_GT(files, 40) << a;  // 45 persistables and the state
  return out;
}

TEST(CliResumeMatrixTest, EveryModePlaceCountAndNodeCountResumesBitForBit) {
  const std::string dir = ScratchDir("resume_matrix");
  WriteFixtureData(dir);
  for (const char* mode : {"allreduce", "reduce"}) {
    for (int places : {1, 2, 3}) {
      for (int nodes : {1, 2}) {
        const std::string cell = std::string(mode) + "_" +
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
        const std::vector<std::string> training = {
            "--program",     kFixture + "/main.pdmodel",
            "--startup",     kFixture + "/startup.pdmodel",
            "--data",        "x=x.npy",
            "--data",        "label=label.npy",
            "--batch",       "16",
            "--no-shuffle",  "--no-progress",
            "--mode",        mode,
            "--lr-schedule", "piecewise:3,6:0.01,0.005,0.002",
            "--save",        cell + "-model"};
        base.insert(base.end(), training.begin(), training.end());
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

}  // namespace
}  // namespace parex::testing
