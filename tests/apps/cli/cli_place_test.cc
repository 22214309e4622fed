// `parex place` and `parex graph --node` as a user runs them (issue 32,
// acceptance 3): a PaddlePaddle-made training program placed over a
// topology of trainers and pservers, written in Paddle's format and read
// back, and each node's part of it with the variables that cross to
// another node; bad clusters, nodes and programs named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "graph/ir/op_role.h"
#include "graph/ir/place_group.h"
#include "graph/ir/program.h"
#include "tests/apps/cli/cli_test_util.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;

const std::string kMlp =
    std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_mlp_momentum/main.pdmodel";

// Two trainers and two pservers (never started: the ports are not opened).
std::string PserverTopology(const std::string& dir, bool pservers = true) {
  WriteTopology(dir, {});
  std::ofstream out(dir + "/cluster.pbtxt", std::ios::app);
  const char* role = pservers ? " role: PSERVER" : "";
  out << "node { name: \"t0\" host: \"127.0.0.1\" port: 29600 places: "
         "\"cpu:1\" }\n"
      << "node { name: \"t1\" host: \"127.0.0.1\" port: 29601 places: "
         "\"cpu:1\" }\n"
      << "node { name: \"ps0\" host: \"127.0.0.1\" port: 29602 places: "
         "\"cpu:1\""
      << role << " }\n"
      << "node { name: \"ps1\" host: \"127.0.0.1\" port: 29603 places: "
         "\"cpu:1\""
      << role << " }\n";
  return dir + "/cluster.pbtxt";
}

nlohmann::json NodeView(const std::string& dir, const std::string& program,
                        const std::string& node) {
  CliRun run = RunParex({"graph", program, "--node", node, "--topology",
                         "cluster.pbtxt", "-o", node + ".json"},
                        dir);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return nlohmann::json::parse(ReadFile(dir + "/" + node + ".json"));
}

TEST(CliPlaceTest, PlacesAPaddleProgramAndShowsEachNodesPart) {
  const std::string dir = ScratchDir("place");
  PserverTopology(dir);
  CliRun place = RunParex(
      {"place", kMlp, "--topology", "cluster.pbtxt", "-o", "placed.pdmodel"},
      dir);
  ASSERT_EQ(place.exit_code, 0) << place.err;
  EXPECT_THAT(place.out, HasSubstr("pservers  ps0, ps1"));
  EXPECT_THAT(place.out, HasSubstr("wrote     placed.pdmodel"));

  // Paddle's format, read back: every op placed, the updates on pservers.
  StatusOr<Program> placed = Program::Load(dir + "/placed.pdmodel");
  ASSERT_TRUE(placed.ok()) << placed.status().ToString();
  const Block& block = placed->global_block();
  int updates = 0;
  for (const auto& op : block.ops()) {
    StatusOr<std::optional<PlaceGroup>> g = PlaceGroupOf(*op);
    ASSERT_TRUE(g.ok() && g->has_value()) << op->Label();
    const bool update = (OpRole(*op) & kOpRoleOptimize) != 0;
    updates += update;
    EXPECT_EQ((*g)->role, update ? NodeRole::kPserver : NodeRole::kTrainer)
        << op->Label();
  }
  EXPECT_EQ(updates, 4);

  // A pserver's part: its updates, the gradients it receives from the
  // trainers and the parameters it sends them.
  const nlohmann::json ps0 = NodeView(dir, "placed.pdmodel", "ps0");
  const nlohmann::json ps1 = NodeView(dir, kMlp, "ps1");  // placed on the fly
  EXPECT_EQ(ps0["role"], "pserver");
  // Every update on one pserver, or on both for a parameter in row blocks.
  std::set<int> on_pservers;
  for (const nlohmann::json* ps : {&ps0, &ps1}) {
    for (const auto& op : (*ps)["ops"]) {
      EXPECT_EQ(op["type"], "momentum");
      on_pservers.insert(op["index"].get<int>());
      const bool split = op["place_group"] == "pserver/ps0,ps1";
      EXPECT_TRUE(split || op["place_group"] ==
                               "pserver/" + (*ps)["node"].get<std::string>())
          << op;
    }
    for (const auto& in : (*ps)["receives"]) {
      if (in["var"].get<std::string>().find("@GRAD") != std::string::npos) {
        EXPECT_EQ(in["from"], "trainer");
      }
    }
    EXPECT_FALSE((*ps)["sends"].empty());
    for (const auto& out : (*ps)["sends"]) {
      EXPECT_EQ(out["to"], nlohmann::json::array({"trainer"})) << out;
    }
  }
  EXPECT_EQ(on_pservers.size(), 4u);
  // A trainer's part: every other op; it receives the parameters and
  // sends the gradients.
  const nlohmann::json t0 = NodeView(dir, "placed.pdmodel", "t0");
  EXPECT_EQ(t0["role"], "trainer");
  EXPECT_EQ(t0["ops"].size(), static_cast<size_t>(block.num_ops() - 4));
  std::set<std::string> received, sent;
  for (const auto& in : t0["receives"]) received.insert(in["var"]);
  for (const auto& out : t0["sends"]) sent.insert(out["var"]);
  for (const auto& op : block.ops()) {
    if ((OpRole(*op) & kOpRoleOptimize) == 0) continue;
    EXPECT_EQ(received.count(op->FirstInput("Param")), 1u);
    EXPECT_EQ(sent.count(op->FirstInput("Grad")), 1u);
  }
  CliRun dot = RunParex({"graph", "placed.pdmodel", "--node", "ps1",
                         "--topology", "cluster.pbtxt", "-o", "ps1.dot"},
                        dir);
  ASSERT_EQ(dot.exit_code, 0) << dot.err;
  EXPECT_EQ(ReadFile(dir + "/ps1.dot").rfind("digraph \"ps1\"", 0), 0u);
  EXPECT_THAT(ReadFile(dir + "/ps1.dot"), HasSubstr("[from trainer]"));
}

TEST(CliPlaceTest, BadClustersNodesAndProgramsAreNamed) {
  const std::string dir = ScratchDir("place_bad");
  PserverTopology(dir);
  const std::string plain = ScratchDir("place_bad_plain");
  PserverTopology(plain, false);
  const std::string startup = std::string(PAREX_TEST_FIXTURES_DIR) +
                              "/paddle_mlp_momentum/startup.pdmodel";
  ExpectFailures(
      {
          {{"place", kMlp, "--topology", plain + "/cluster.pbtxt", "-o",
            "p.pdmodel"},
           1,
           "placement needs trainer and pserver nodes; it has 4 trainer(s) "
           "and 0 pserver(s)"},
          {{"graph", kMlp, "--node", "nosuch", "--topology", "cluster.pbtxt",
            "-o", "g.json"},
           2,
           "no node 'nosuch'"},
          {{"graph", kMlp, "--node", "ps0", "-o", "g.json"},
           2,
           "--node needs --topology"},
          {{"graph", kMlp, "--topology", "cluster.pbtxt", "-o", "g.json"},
           2,
           "name it with --node"},
      },
      dir);
  // A program without updates (the fixture's startup program).
  CliRun run = RunParex(
      {"place", startup, "--topology", "cluster.pbtxt", "-o", "p.pdmodel"},
      dir);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("not a training program"));
}

}  // namespace
}  // namespace parex::testing
