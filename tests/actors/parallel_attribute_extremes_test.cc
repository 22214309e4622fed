// The attribute-extremes matrix (tests/apps/attribute_extremes_test.cc) on
// the product's own path: every variant that validates is run for one step by
// the ParallelExecutor on 2 CPU places (as `parex infer` and `parex train`
// run programs). Each must succeed or fail with an error that names what
// failed; none may crash, hang or abort the process.
#include <gtest/gtest.h>

#include <string>

#include "actors/executor/parallel_executor.h"
#include "graph/builder/examples.h"
#include "graph/ir/validate.h"
#include "kernels/example_feed.h"
#include "tests/fuzz/fuzz_util.h"

namespace parex {
namespace {

void RunVariants(const Program& program, const std::string& what, int* ran,
                 int* failed) {
  fuzz::SetUpOnce();
  fuzz::ForEachAttributeVariant(program, [&](const Program& p,
                                             const std::string& change) {
    SCOPED_TRACE(what + " " + change);
    if (!ValidateProgram(p).ok()) return;
    Scope scope;
    FeedMap feeds;
    fuzz::SmallInputs(p, &scope, &feeds);
    StatusOr<std::unique_ptr<ParallelExecutor>> pe = ParallelExecutor::Create(
        {Place::CPU(0), Place::CPU(1)}, p, fuzz::LossOf(p), &scope);
    if (!pe.ok()) {
      ++*failed;
      EXPECT_FALSE(pe.status().message().empty());
      return;
    }
    StatusOr<std::vector<Tensor>> out = (*pe)->Run(feeds, {});
    if (out.ok()) {
      ++*ran;
    } else {
      ++*failed;
      // The op, feed or variable that failed, on its place.
      const std::string& m = out.status().message();
      EXPECT_TRUE(m.find("op #") != std::string::npos ||
                  m.find("feed") != std::string::npos ||
                  m.find("'") != std::string::npos)
          << m;
    }
  });
}

class ParallelAttributeExtremesTest
    : public ::testing::TestWithParam<ExampleKind> {};

TEST_P(ParallelAttributeExtremesTest, TrainingProgramOnTwoPlaces) {
  StatusOr<ExampleProgram> ex = BuildExample(GetParam());
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  int ran = 0, failed = 0;
  RunVariants(ex->main, std::string(ExampleName(GetParam())) + " main", &ran,
              &failed);
  std::printf("%s on 2 places: %d variants ran, %d failed with an error\n",
              ExampleName(GetParam()), ran, failed);
  EXPECT_GT(ran, 0);
  EXPECT_GT(failed, 0);
}

INSTANTIATE_TEST_SUITE_P(Examples, ParallelAttributeExtremesTest,
                         ::testing::Values(ExampleKind::kDigitsMlp,
                                           ExampleKind::kFashionCnn),
                         [](const auto& info) {
                           return std::string(ExampleName(info.param));
                         });

}  // namespace
}  // namespace parex
