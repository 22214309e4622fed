// Control flow as Paddle 2.6 writes it (tests/apps/fixtures/
// paddle_control_flow/make_fixture.py): to_static `if` and `while` (one with
// an `if` nested in its body) give Paddle's outputs through `parex infer` on
// one and two places; static programs with paddle.static.nn.cond and
// while_loop train as Paddle did (ten Adam losses, final persistables) on one
// and two places; a loop that never ends and crafted sub-block references
// end with errors naming the op.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli/npy.h"
#include "graph/ir/program.h"
#include "tests/apps/cli/cli_test_util.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;

const std::string kFixtures =
    std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_control_flow";

// Runs `parex infer` on infer/`name` and returns the largest difference from
// Paddle's output, relative to its largest element.
double InferError(const std::string& name, const std::string& places) {
  const std::string model = kFixtures + "/infer/" + name;
  const std::string dir = ScratchDir("control_flow_" + name);
  CliRun run =
      RunParex({"infer", "--model", model + "/model.pdmodel", "--params",
                model + "/model.pdiparams", "--input", "x=" + model + "/x.npy",
                "--output", "out", "--places", places},
               dir);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const std::string line = run.out.substr(run.out.find("\n  ") + 3);
  std::string file = line.substr(0, line.find(':'));
  std::replace(file.begin(), file.end(), '/', '_');
  StatusOr<Tensor> got = ReadNpy(dir + "/out/" + file + ".npy");
  StatusOr<Tensor> want = ReadNpy(model + "/y.npy");
  if (!got.ok() || !want.ok() || got->dims() != want->dims()) {
    ADD_FAILURE() << run.out << run.err;
    return 1e9;
  }
  double scale = 0, worst = 0;
  for (int64_t i = 0; i < want->numel(); ++i) {
    scale = std::max(scale, std::abs(double{want->data<float>()[i]}));
    worst = std::max(worst, std::abs(double{got->data<float>()[i]} -
                                     want->data<float>()[i]));
  }
  EXPECT_GT(scale, 0.1) << name;  // outputs that say something
  return worst / scale;
}

TEST(CliControlFlowTest, ToStaticIfAndWhileInferAsInPaddle) {
  for (const char* program :
       {"infer/if_net/model.pdmodel", "infer/while_net/model.pdmodel",
        "infer/list_net/model.pdmodel", "train_if/main.pdmodel",
        "train_while/main.pdmodel"}) {
    CliRun run = RunParex({"inspect", kFixtures + "/" + program},
                          ScratchDir("control_flow_inspect"));
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("parex runs every op of this program"))
        << program;
  }
  for (const char* name : {"if_net", "while_net", "list_net"}) {
    for (const char* places : {"cpu:1", "cpu:2"}) {
      SCOPED_TRACE(std::string(name) + " on " + places);
      EXPECT_LT(InferError(name, places), 1e-5);
    }
  }
}

TEST(CliControlFlowTest, CondAndWhileLoopTrainAsInPaddle) {
  for (const char* kind : {"if", "while"}) {
    const std::string fixture = kFixtures + "/train_" + kind;
    std::vector<double> want;
    {
      std::istringstream in(ReadFile(fixture + "/losses.txt"));
      for (std::string l; std::getline(in, l);) want.push_back(std::stod(l));
    }
    ASSERT_EQ(want.size(), 10u);
    for (const char* places : {"cpu:1", "cpu:2"}) {
      SCOPED_TRACE(std::string(kind) + " on " + places);
      const std::string dir =
          ScratchDir(std::string("control_flow_train_") + kind);
      CliRun run =
          RunParex({"train", "--program", fixture + "/main.pdmodel", "--params",
                    fixture + "/params", "--data", fixture + "/data", "--batch",
                    "16", "--no-shuffle", "--places", places, "--metrics",
                    "m.jsonl", "--save", "trained", "--no-progress"},
                   dir);
      ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
      const std::vector<double> got = Losses(dir + "/m.jsonl");
      ASSERT_EQ(got.size(), 10u);
      for (int s = 0; s < 10; ++s) {
        EXPECT_NEAR(got[s], want[s], 1e-4 * std::abs(want[s]))
            << "step " << s + 1;
      }
      ExpectPaddlesFinalPersistables(dir + "/trained", fixture, 12);
    }
  }
}

TEST(CliControlFlowTest, EndlessLoopStopsAtTheLimitNamingTheOp) {
  const std::string model = kFixtures + "/infer/endless_net";
  const std::string dir = ScratchDir("control_flow_endless");
  ASSERT_EQ(setenv("PAREX_MAX_LOOP_ITERATIONS", "300", 1), 0);
  CliRun run = RunParex({"infer", "--model", model + "/model.pdmodel",
                         "--params", model + "/model.pdiparams", "--input",
                         "x=" + model + "/x.npy", "--places", "cpu:2"},
                        dir);
  unsetenv("PAREX_MAX_LOOP_ITERATIONS");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_THAT(run.err, HasSubstr("'while' (block 0): the loop ran 300 "
                                 "iterations and its condition"));
  EXPECT_THAT(run.err, HasSubstr("PAREX_MAX_LOOP_ITERATIONS"));
}

// The if_net program with its first conditional_block's sub_block changed
// by `edit`, saved in `dir`.
std::string CraftedIfNet(const std::string& dir,
                         void (*edit)(proto::OpDesc::Attr*)) {
  StatusOr<Program> program =
      Program::Load(kFixtures + "/infer/if_net/model.pdmodel");
  EXPECT_TRUE(program.ok());
  proto::ProgramDesc desc = program->proto();
  for (auto& op : *desc.mutable_blocks(0)->mutable_ops()) {
    if (op.type() != "conditional_block") continue;
    for (auto& attr : *op.mutable_attrs()) {
      if (attr.name() == "sub_block") edit(&attr);
    }
    break;
  }
  const std::string path = dir + "/crafted.pdmodel";
  EXPECT_TRUE(Program(desc).Save(path).ok());
  return path;
}

TEST(CliControlFlowTest, CraftedSubBlocksAreNamed) {
  const std::string model = kFixtures + "/infer/if_net";
  const std::string dir = ScratchDir("control_flow_crafted");
  struct Case {
    void (*edit)(proto::OpDesc::Attr*);
    const char* message;
  };
  const Case cases[] = {
      {[](proto::OpDesc::Attr* a) { a->set_block_idx(99); },
       "attribute 'sub_block' names block 99, but the program has blocks"},
      {[](proto::OpDesc::Attr* a) { a->set_block_idx(0); },
       "attribute 'sub_block' names block 0"},
      {[](proto::OpDesc::Attr* a) { a->set_block_idx(-3); },
       "attribute 'sub_block' names block -3"},
      {[](proto::OpDesc::Attr* a) {
         a->set_type(proto::INT);
         a->set_i(1);
       },
       "attribute 'sub_block' has type INT, expected BLOCK"},
  };
  for (const Case& c : cases) {
    const std::string path = CraftedIfNet(dir, c.edit);
    for (const char* cmd : {"infer", "inspect"}) {
      SCOPED_TRACE(std::string(cmd) + ": " + c.message);
      std::vector<std::string> args = {cmd, "--model", path};
      if (std::string(cmd) == "infer") {
        args.insert(args.end(), {"--params", model + "/model.pdiparams",
                                 "--input", "x=" + model + "/x.npy"});
      } else {
        args = {cmd, path};
      }
      CliRun run = RunParex(args, dir);
      EXPECT_NE(run.exit_code, 0) << run.out;
      EXPECT_THAT(run.err + run.out, HasSubstr("'conditional_block'"));
      EXPECT_THAT(run.err + run.out, HasSubstr(c.message));
    }
  }
}

}  // namespace
}  // namespace parex::testing
