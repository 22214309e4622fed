// Tests of graph/builder/placement.cc and graph/ir/place_group.cc: the
// placement pass for parameter-server training over the example programs
// (every op and variable placed, parameters dealt by size and large ones
// in row blocks, learning-rate ops with their readers, the program's own
// placements kept), the PlaceGroup text form, and the round trip of a
// placed program through Paddle's format.
#include "graph/builder/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/builder/examples.h"
#include "graph/ir/op_role.h"

namespace parex {
namespace {

using ::testing::HasSubstr;

PlaceGroup GroupOf(const OpDesc& op) {
  StatusOr<std::optional<PlaceGroup>> g = PlaceGroupOf(op);
  EXPECT_TRUE(g.ok() && g->has_value()) << op.Label();
  return g.ok() && g->has_value() ? **g : PlaceGroup();
}

PlaceGroup GroupOf(const Block& block, const std::string& var) {
  StatusOr<std::optional<PlaceGroup>> g = PlaceGroupOf(*block.FindVar(var));
  EXPECT_TRUE(g.ok() && g->has_value()) << var;
  return g.ok() && g->has_value() ? **g : PlaceGroup();
}

PlacementOptions Cluster(std::vector<std::string> pservers) {
  return {std::move(pservers), {"t0", "t1"}};
}

Program FashionMlp(OptimizerKind optimizer = OptimizerKind::kAdam) {
  ExampleOptions options;
  options.optimizer = optimizer;
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kFashionMlp, options);
  EXPECT_TRUE(ex.ok()) << ex.status().ToString();
  return ex->main;
}

TEST(PlaceGroupTest, TextFormRoundTripsAndBadOnesAreNamed) {
  for (const char* text :
       {"trainer", "pserver", "trainer/t0", "pserver/ps0", "pserver/ps0,ps1",
        "pserver/ps0/cpu:0-1", "trainer//cpu:2"}) {
    StatusOr<PlaceGroup> g = ParsePlaceGroup(text);
    ASSERT_TRUE(g.ok()) << text << ": " << g.status().ToString();
    EXPECT_EQ(g->ToString(), text);
  }
  const StatusOr<PlaceGroup> two = ParsePlaceGroup("pserver/a,b");
  EXPECT_TRUE(two->Includes(NodeRole::kPserver, "b"));
  EXPECT_FALSE(two->Includes(NodeRole::kPserver, "c"));
  EXPECT_FALSE(two->Includes(NodeRole::kTrainer, "a"));
  EXPECT_EQ(two->BlockOf("b"), 1);
  EXPECT_TRUE(ParsePlaceGroup("trainer")->Includes(NodeRole::kTrainer, "x"));
  const std::map<std::string, std::string> bad = {
      {"master", "role 'master'"},
      {"pserver/a,a", "node 'a' is named twice"},
      {"pserver/a b", "node 'a b'"},
      {"pserver/a,", "node ''"},
      {"pserver/a/cpu:0/x", "more than three parts"},
      {"pserver/a/CPU;0", "places 'CPU;0'"},
      {std::string("trainer/\x01", 9), "\\x01"},
  };
  for (const auto& [text, want] : bad) {
    StatusOr<PlaceGroup> g = ParsePlaceGroup(text);
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_THAT(g.status().message(), HasSubstr(want));
  }
}

TEST(RowBlockTest, EvenSplitsCoverEveryRowOnce) {
  EXPECT_EQ(RowBlock(10, 0, 3), (std::pair<int64_t, int64_t>{0, 4}));
  EXPECT_EQ(RowBlock(10, 1, 3), (std::pair<int64_t, int64_t>{4, 7}));
  EXPECT_EQ(RowBlock(10, 2, 3), (std::pair<int64_t, int64_t>{7, 10}));
  EXPECT_EQ(RowBlock(2, 1, 2), (std::pair<int64_t, int64_t>{1, 2}));
}

// Every op and variable gets a group: forward, backward and loss ops on
// the trainers, each update op with its parameter and accumulators on a
// pserver, the learning rate with the updates that read it, feeds and
// gradients on the trainers.
TEST(PlacementTest, TrainersComputePserversUpdate) {
  for (const std::vector<std::string>& pservers :
       {std::vector<std::string>{"ps0"},
        std::vector<std::string>{"ps0", "ps1"}}) {
    Program program = FashionMlp();
    StatusOr<PlacementReport> report =
        PlaceForParameterServers(&program, Cluster(pservers));
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    const Block& block = program.global_block();
    int updates = 0;
    for (const auto& op : block.ops()) {
      const PlaceGroup g = GroupOf(*op);
      if ((OpRole(*op) & kOpRoleOptimize) == 0) {
        EXPECT_EQ(g, PlaceGroup()) << op->Label();
        continue;
      }
      ++updates;
      EXPECT_EQ(g.role, NodeRole::kPserver) << op->Label();
      const std::string param = op->FirstInput("Param");
      EXPECT_EQ(GroupOf(block, param), g) << param;
      EXPECT_EQ(GroupOf(block, op->FirstInput("Moment1")), g);
      EXPECT_EQ(GroupOf(block, op->FirstInput("Beta1Pow")), g);
      EXPECT_EQ(GroupOf(block, op->FirstInput("Grad")), PlaceGroup());
      const PlaceGroup lr = GroupOf(block, op->FirstInput("LearningRate"));
      EXPECT_EQ(lr.role, NodeRole::kPserver);
      for (const std::string& node : g.nodes) {
        EXPECT_TRUE(lr.Includes(NodeRole::kPserver, node)) << node;
      }
    }
    EXPECT_EQ(updates, static_cast<int>(report->shards.size()));
    EXPECT_EQ(report->pserver_ops, updates);
    EXPECT_EQ(report->trainer_ops, block.num_ops() - updates);
    EXPECT_EQ(GroupOf(block, "image"), PlaceGroup());
    int64_t total = 0, placed = 0;
    for (const auto& s : report->shards) total += s.numel;
    for (const auto& [node, elements] : report->elements) placed += elements;
    EXPECT_EQ(placed, total);
  }
}

// Largest first to the least loaded pserver; a parameter over a fair share
// in row blocks over every pserver.
TEST(PlacementTest, ParametersAreDealtBySizeAndLargeOnesSplitInRows) {
  Program program = FashionMlp();
  StatusOr<PlacementReport> report =
      PlaceForParameterServers(&program, Cluster({"ps0", "ps1", "ps2"}));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  int64_t total = 0;
  for (const auto& s : report->shards) total += s.numel;
  int split = 0;
  for (const auto& s : report->shards) {
    if (s.numel * 3 > total) {
      ++split;
      EXPECT_EQ(s.group.nodes, (std::vector<std::string>{"ps0", "ps1", "ps2"}))
          << s.param;
    } else {
      EXPECT_EQ(s.group.nodes.size(), 1u) << s.param;
    }
  }
  EXPECT_GE(split, 1);
  // No pserver holds more than a fair share plus the largest unsplit one.
  int64_t largest_whole = 0;
  for (const auto& s : report->shards) {
    if (s.group.nodes.size() == 1)
      largest_whole = std::max(largest_whole, s.numel);
  }
  for (const auto& [node, elements] : report->elements) {
    EXPECT_LE(elements, total / 3 + largest_whole + 1) << node;
  }
}

// A learning-rate op runs on the pservers whose updates read its rate.
TEST(PlacementTest, LearningRateOpsRunWhereTheirRateIsRead) {
  Program base = FashionMlp(OptimizerKind::kSGD);
  proto::ProgramDesc desc = base.proto();
  proto::BlockDesc* block = desc.mutable_blocks(0);
  std::string lr;
  for (const auto& op : block->ops()) {
    for (const auto& in : op.inputs()) {
      if (in.parameter() == "LearningRate") lr = in.arguments(0);
    }
  }
  ASSERT_FALSE(lr.empty());
  proto::VarDesc* base_var = block->add_vars();
  *base_var = *std::find_if(block->vars().begin(), block->vars().end(),
                            [&](const auto& v) { return v.name() == lr; });
  base_var->set_name("lr_base");
  proto::OpDesc* scale = block->add_ops();
  scale->set_type("scale");
  scale->add_inputs()->set_parameter("X");
  scale->mutable_inputs(0)->add_arguments("lr_base");
  scale->add_outputs()->set_parameter("Out");
  scale->mutable_outputs(0)->add_arguments(lr);
  for (int i = block->ops_size() - 1; i > 0; --i) {
    block->mutable_ops()->SwapElements(i, i - 1);  // first op
  }
  Program program(desc);
  program.global_block().op(0).SetAttr<int>("op_role", kOpRoleLRSched);
  StatusOr<PlacementReport> report =
      PlaceForParameterServers(&program, Cluster({"ps0", "ps1"}));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  std::set<std::string> readers;
  for (const auto& s : report->shards) {
    readers.insert(s.group.nodes.begin(), s.group.nodes.end());
  }
  const PlaceGroup g = GroupOf(program.global_block().op(0));
  EXPECT_EQ(g.role, NodeRole::kPserver);
  EXPECT_EQ(std::set<std::string>(g.nodes.begin(), g.nodes.end()), readers);
  EXPECT_EQ(GroupOf(program.global_block(), "lr_base"), g);
  EXPECT_EQ(GroupOf(program.global_block(), lr), g);
}

// What the program places stays: a parameter placed on ps1 takes its
// update op along, a placed op keeps its group, and the rest is dealt
// around them.
TEST(PlacementTest, TheProgramsPlacementsWin) {
  Program program = FashionMlp();
  Block& block = program.global_block();
  std::vector<OpDesc*> updates;
  for (const auto& op : block.ops()) {
    if ((OpRole(*op) & kOpRoleOptimize) != 0) updates.push_back(op.get());
  }
  ASSERT_GE(updates.size(), 2u);
  const std::string param = updates[0]->FirstInput("Param");
  SetPlaceGroup(block.FindVar(param), *ParsePlaceGroup("pserver/ps1"));
  SetPlaceGroup(updates[1], *ParsePlaceGroup("pserver/ps0,ps1"));
  SetPlaceGroup(&block.op(0), *ParsePlaceGroup("trainer/t1"));
  StatusOr<PlacementReport> report =
      PlaceForParameterServers(&program, Cluster({"ps0", "ps1"}));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->user_placed, 3);
  EXPECT_EQ(GroupOf(*updates[0]).ToString(), "pserver/ps1");
  EXPECT_EQ(GroupOf(*updates[1]).ToString(), "pserver/ps0,ps1");
  EXPECT_EQ(GroupOf(block, updates[1]->FirstInput("Param")).ToString(),
            "pserver/ps0,ps1");
  EXPECT_EQ(GroupOf(block.op(0)).ToString(), "trainer/t1");
  EXPECT_TRUE(report->shards[0].user);
}

TEST(PlacementTest, BadPlacementsAndProgramsAreNamed) {
  struct Case {
    std::string what;
    std::function<void(Program*)> spoil;
    PlacementOptions cluster;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"unknown pserver",
       [](Program* p) {
         SetPlaceGroup(&p->global_block().op(0),
                       *ParsePlaceGroup("pserver/ps9"));
       },
       Cluster({"ps0"}), "names pserver 'ps9'"},
      {"unknown trainer",
       [](Program* p) {
         SetPlaceGroup(&p->global_block().op(0),
                       *ParsePlaceGroup("trainer/t7"));
       },
       Cluster({"ps0"}), "names trainer 't7'"},
      {"parameter on trainers",
       [](Program* p) {
         for (const auto& op : p->global_block().ops()) {
           if ((OpRole(*op) & kOpRoleOptimize) != 0) {
             SetPlaceGroup(op.get(), PlaceGroup());
             return;
           }
         }
       },
       Cluster({"ps0"}), "parameters live on pservers"},
      {"malformed attribute",
       [](Program* p) {
         p->global_block().op(1).SetAttr<std::string>("place_group",
                                                      "pserver/");
       },
       Cluster({"ps0"}), "place_group 'pserver/'"},
      {"op and parameter disagree",
       [](Program* p) {
         for (const auto& op : p->global_block().ops()) {
           if ((OpRole(*op) & kOpRoleOptimize) != 0) {
             SetPlaceGroup(op.get(), *ParsePlaceGroup("pserver/ps0"));
             SetPlaceGroup(p->global_block().FindVar(op->FirstInput("Param")),
                           *ParsePlaceGroup("pserver/ps1"));
             return;
           }
         }
       },
       Cluster({"ps0", "ps1"}), "an update runs where its parameter lives"},
      {"no pserver", [](Program*) {}, Cluster({}), "no pserver"},
  };
  for (const Case& c : cases) {
    Program program = FashionMlp();
    c.spoil(&program);
    StatusOr<PlacementReport> report =
        PlaceForParameterServers(&program, c.cluster);
    ASSERT_FALSE(report.ok()) << c.what;
    EXPECT_THAT(report.status().message(), HasSubstr(c.want)) << c.what;
  }
  // An inference program has nothing to place on pservers.
  ExampleOptions forward_only;
  forward_only.minimize = false;
  StatusOr<ExampleProgram> ex =
      BuildExample(ExampleKind::kFashionMlp, forward_only);
  ASSERT_TRUE(ex.ok());
  StatusOr<PlacementReport> report =
      PlaceForParameterServers(&ex->main, Cluster({"ps0"}));
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.status().message(), HasSubstr("not a training program"));
}

// A placed program written in Paddle's format and read back places every
// op and variable as before (op attribute and VarDesc attribute
// `place_group`).
TEST(PlacementTest, PlacedProgramsRoundTripThroughPaddlesFormat) {
  Program program = FashionMlp();
  ASSERT_TRUE(PlaceForParameterServers(&program, Cluster({"ps0", "ps1"})).ok());
  const std::string path =
      std::string(PAREX_TEST_TMP_DIR) + "/placed_fashion_mlp.pdmodel";
  ASSERT_TRUE(program.Save(path).ok());
  StatusOr<Program> back = Program::Load(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const Block& a = program.global_block();
  const Block& b = back->global_block();
  ASSERT_EQ(a.num_ops(), b.num_ops());
  for (int i = 0; i < a.num_ops(); ++i) {
    EXPECT_EQ(GroupOf(a.op(i)), GroupOf(b.op(i))) << a.op(i).Label();
  }
  ASSERT_EQ(a.vars().size(), b.vars().size());
  for (const auto& var : a.vars()) {
    EXPECT_EQ(GroupOf(a, var->name()), GroupOf(b, var->name())) << var->name();
  }
  // Placing a placed program again changes nothing.
  Program again = *back;
  StatusOr<PlacementReport> report =
      PlaceForParameterServers(&again, Cluster({"ps0", "ps1"}));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(again.proto().SerializeAsString(),
            back->proto().SerializeAsString());
}

}  // namespace
}  // namespace parex
