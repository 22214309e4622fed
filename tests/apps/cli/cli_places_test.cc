// Place lists on the command line and in topology files (issue 29, build
// item 1): CUDA places a process cannot run end `train`, `infer`, `node`
// and `launch` with exit 1 and a message naming the place, before anything
// is loaded or joined; bad spellings are usage errors (exit 2).
//
// Each run hides every CUDA device (CUDA_VISIBLE_DEVICES=""), so the
// outcome is the same on a machine with GPUs: no device is visible, or
// this parex was built without CUDA.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "tests/apps/cli/cli_test_util.h"

namespace parex::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

// Why no CUDA place runs under CUDA_VISIBLE_DEVICES="", either way.
const auto kNoCuda = AnyOf(HasSubstr("built without CUDA support"),
                           HasSubstr("0 CUDA devices visible, "
                                     "CUDA_VISIBLE_DEVICES=''"));

class CliPlacesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) saved_ = v;
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
  }
  void TearDown() override {
    if (saved_) {
      setenv("CUDA_VISIBLE_DEVICES", saved_->c_str(), 1);
    } else {
      unsetenv("CUDA_VISIBLE_DEVICES");
    }
  }
  std::optional<std::string> saved_;
};

TEST_F(CliPlacesTest, TrainOnACudaPlaceNamesItAndExits1) {
  const std::string dir = ScratchDir("places_train");
  for (const char* places : {"cuda:0", "cuda:0x2", "gpu:1"}) {
    // A data directory that does not exist: the places are refused first.
    CliRun run =
        RunParex({"train", "--places", places, "--data-dir", "nowhere"}, dir);
    EXPECT_EQ(run.exit_code, 1) << places << "\n" << run.err;
    EXPECT_THAT(run.err, HasSubstr("parex train: error: --places '" +
                                   std::string(places) + "': place cuda:"))
        << places;
    EXPECT_THAT(run.err, kNoCuda) << places;
    EXPECT_THAT(run.err, Not(HasSubstr("nowhere"))) << places;
  }
}

TEST_F(CliPlacesTest, InferOnEveryCudaDeviceNamesThePlacesAndExits1) {
  const std::string dir = ScratchDir("places_infer");
  CliRun run = RunParex({"infer", "--model", "no_model", "--input",
                         "image=no_image.npy", "--places", "cuda:all"},
                        dir);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_THAT(run.err,
              HasSubstr("parex infer: error: --places 'cuda:all': no cuda "
                        "device is visible"));
  EXPECT_THAT(run.err, kNoCuda);
  EXPECT_THAT(run.err, Not(HasSubstr("no_model")));
}

TEST_F(CliPlacesTest, ATopologyOfCudaPlacesEndsNodeAndLaunchWithExit1) {
  const std::string dir = ScratchDir("places_topology");
  std::ofstream(dir + "/cluster.secret")
      << "a-test-secret-of-more-than-16-bytes";
  fs::permissions(dir + "/cluster.secret",
                  fs::perms::owner_read | fs::perms::owner_write);
  const std::string topology = dir + "/gpus.pbtxt";
  // Nobody listens on these ports: neither node gets as far as its peers.
  std::ofstream(topology)
      << "cluster: \"gpus\"\nsecret_file: \"cluster.secret\"\n"
         "node { name: \"a\" host: \"127.0.0.1\" port: 47981 places: "
         "\"cuda:0x2\" }\n"
         "node { name: \"b\" host: \"127.0.0.1\" port: 47982 places: "
         "\"cuda:1\" }\n";
  CliRun node = RunParex({"node", "--topology", topology, "--node", "b"}, dir);
  EXPECT_EQ(node.exit_code, 1) << node.err;
  EXPECT_THAT(node.err, HasSubstr("parex node: error: " + topology +
                                  ": node 'b': places 'cuda:1': place "
                                  "cuda:1: "));
  EXPECT_THAT(node.err, kNoCuda);

  CliRun launch = RunParex({"launch", "--topology", topology}, dir);
  EXPECT_EQ(launch.exit_code, 1) << launch.err;
  EXPECT_THAT(launch.err,
              HasSubstr("parex launch: error: " + topology +
                        ": node 'a': places 'cuda:0x2': place cuda:0: "));
  EXPECT_THAT(launch.err, kNoCuda);
  EXPECT_THAT(launch.out, Not(HasSubstr("nodes of")));  // none started
}

TEST_F(CliPlacesTest, BadSpellingsAreUsageErrorsQuotingTheList) {
  const std::string dir = ScratchDir("places_bad");
  std::vector<BadRun> cases;
  for (const char* bad :
       {"cuda:0x0", "cuda:allx", "cuda:0x", "cuda:0x65", "cuda:0-1,1",
        "cuda:99999999999", "cpu:0x2", "sim:all", "cuda:0.1"}) {
    cases.push_back(
        {{"train", "--places", bad},
         2,
         "parex train: error: bad --places '" + std::string(bad) + "'"});
  }
  cases.push_back(
      {{"infer", "--model", "m", "--input", "x=x.npy", "--places", "cuda:allx"},
       2,
       "bad --places 'cuda:allx'"});
  ExpectFailures(cases, dir);
}

// `parex graph` runs nothing: it draws the graph of CUDA places, slots
// included, on any machine.
TEST_F(CliPlacesTest, GraphDrawsCudaPlaces) {
  const std::string dir = ScratchDir("places_graph");
  CliRun run = RunParex({"graph", "--model", "digits_mlp", "--places",
                         "cuda:0x2", "-o", "g.json"},
                        dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("on 2 places"));
  EXPECT_THAT(ReadFile(dir + "/g.json"), HasSubstr("cuda:0.1"));
}

}  // namespace
}  // namespace parex::testing
