// Every attribute of every op in real programs, set to extreme values: the
// program is either rejected by validation with an error naming the op, or
// it runs one small step to success or to an error naming the op. Never a
// crash (ASan/UBSan in CI), a hang (ctest's timeout) or an allocation the
// limit does not stop. This is the attribute half of issue 11's "programs
// are validated for what the kernels assume"; the fuzzers cover the rest.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "apps/models.h"
#include "graph/ir/validate.h"
#include "tests/fuzz/fuzz_util.h"

namespace parex {
namespace {

struct Counts {
  int rejected = 0, ran = 0, failed_run = 0;
};

// Every variant of every attribute of every op of block 0.
void Torture(const Program& program, const std::string& what, Counts* counts) {
  fuzz::SetUpOnce();
  fuzz::ForEachAttributeVariant(program, [&](const Program& p,
                                             const std::string& change) {
    SCOPED_TRACE(what + " " + change);
    Status valid = ValidateProgram(p);
    if (!valid.ok()) {
      ++counts->rejected;
      EXPECT_NE(valid.message().find("op #"), std::string::npos)
          << valid.message();
      return;
    }
    Status run = fuzz::RunOneSmallStep(p);
    if (run.ok()) {
      ++counts->ran;
    } else {
      ++counts->failed_run;
      EXPECT_NE(run.message().find("op #"), std::string::npos) << run.message();
    }
  });
}

class AttributeExtremesTest : public ::testing::TestWithParam<ExampleKind> {};

TEST_P(AttributeExtremesTest, RejectedOrRunOrFailWithTheOpNamed) {
  StatusOr<ExampleProgram> ex = BuildExample(GetParam());
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  // The unmodified programs run: the harness itself is sound.
  ASSERT_TRUE(fuzz::RunOneSmallStep(ex->startup).ok());
  Status plain = fuzz::RunOneSmallStep(ex->main);
  ASSERT_TRUE(plain.ok()) << plain.ToString();
  Counts counts;
  Torture(ex->main, std::string(ExampleName(GetParam())) + " main", &counts);
  Torture(ex->startup, std::string(ExampleName(GetParam())) + " startup",
          &counts);
  std::printf(
      "%s: %d variants rejected by validation, %d ran, %d failed to run\n",
      ExampleName(GetParam()), counts.rejected, counts.ran, counts.failed_run);
  EXPECT_GT(counts.rejected, 0);
  EXPECT_GT(counts.ran, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Examples, AttributeExtremesTest,
    ::testing::Values(ExampleKind::kFitALine, ExampleKind::kDigitsMlp,
                      ExampleKind::kFashionMlp, ExampleKind::kFashionCnn),
    [](const auto& info) { return std::string(ExampleName(info.param)); });

TEST(AttributeExtremesTest, PaddleTrainingProgram) {
  StatusOr<Program> main = Program::Load(std::string(PAREX_TEST_FIXTURES_DIR) +
                                         "/paddle_mlp_momentum/main.pdmodel");
  ASSERT_TRUE(main.ok()) << main.status().ToString();
  Counts counts;
  Torture(*main, "paddle_mlp_momentum main", &counts);
  EXPECT_GT(counts.rejected, 0);
  EXPECT_GT(counts.ran, 0);
}

}  // namespace
}  // namespace parex
