// Every attribute of every op in real programs, set to extreme values: the
// program is either rejected by validation with an error naming the op, or
// it runs one small step to success or to an error naming the op. Never a
// crash (ASan/UBSan in CI), a hang (ctest's timeout) or an allocation the
// limit does not stop. This is the attribute half of issue 11's "programs
// are validated for what the kernels assume"; the fuzzers cover the rest.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "apps/models.h"
#include "graph/validate.h"
#include "tests/fuzz/fuzz_util.h"

namespace parex {
namespace {

using Attr = proto::OpDesc::Attr;

const std::vector<int64_t>& ExtremeInts() {
  static const std::vector<int64_t> v = {INT_MIN, -(1 << 20), -5, -1, 0,
                                         1,       3,          1 << 20, INT_MAX};
  return v;
}
const std::vector<double>& ExtremeFloats() {
  static const std::vector<double> v = {-1e30, -1, 0, 1e-30, 2, 1e30,
                                        std::numeric_limits<double>::infinity(),
                                        std::numeric_limits<double>::quiet_NaN()};
  return v;
}

// Variants of one attribute: each scalar extreme; for lists, every element
// set to each extreme, and lists of 0, 1 and 5 elements.
std::vector<Attr> Variants(const Attr& a) {
  std::vector<Attr> out;
  auto with = [&](auto set) {
    Attr v = a;
    set(&v);
    out.push_back(v);
  };
  switch (a.type()) {
    case proto::INT:
      for (int64_t x : ExtremeInts()) with([&](Attr* v) { v->set_i(static_cast<int>(x)); });
      break;
    case proto::LONG:
      for (int64_t x : ExtremeInts()) with([&](Attr* v) { v->set_l(x); });
      with([&](Attr* v) { v->set_l(INT64_MAX); });
      with([&](Attr* v) { v->set_l(INT64_MIN); });
      break;
    case proto::BOOLEAN:
      with([&](Attr* v) { v->set_b(!a.b()); });
      break;
    case proto::FLOAT:
      for (double x : ExtremeFloats()) with([&](Attr* v) { v->set_f(static_cast<float>(x)); });
      break;
    case proto::FLOAT64:
      for (double x : ExtremeFloats()) with([&](Attr* v) { v->set_float64(x); });
      break;
    case proto::INTS:
      for (int64_t x : ExtremeInts()) {
        with([&](Attr* v) {
          for (int i = 0; i < v->ints_size(); ++i) v->set_ints(i, static_cast<int>(x));
        });
        if (a.ints_size() > 0) {
          with([&](Attr* v) { v->set_ints(0, static_cast<int>(x)); });
        }
      }
      with([&](Attr* v) { v->clear_ints(); });
      with([&](Attr* v) { v->clear_ints(); v->add_ints(2); });
      with([&](Attr* v) { v->clear_ints(); for (int i = 0; i < 5; ++i) v->add_ints(1); });
      break;
    case proto::LONGS:
      for (int64_t x : {int64_t{INT64_MIN}, int64_t{-1}, int64_t{0},
                        int64_t{1} << 40, int64_t{INT64_MAX}}) {
        with([&](Attr* v) {
          for (int i = 0; i < v->longs_size(); ++i) v->set_longs(i, x);
        });
      }
      with([&](Attr* v) { v->clear_longs(); });
      with([&](Attr* v) { v->clear_longs(); for (int i = 0; i < 12; ++i) v->add_longs(2); });
      break;
    case proto::FLOATS:
      for (double x : ExtremeFloats()) {
        with([&](Attr* v) {
          for (int i = 0; i < v->floats_size(); ++i) v->set_floats(i, static_cast<float>(x));
        });
      }
      with([&](Attr* v) { v->clear_floats(); });
      break;
    case proto::STRING:
      with([&](Attr* v) { v->set_s(""); });
      with([&](Attr* v) { v->set_s("no such choice"); });
      break;
    default:
      break;
  }
  return out;
}

struct Counts {
  int rejected = 0, ran = 0, failed_run = 0;
};

// Every variant of every attribute of every op of block 0.
void Torture(const Program& program, const std::string& what, Counts* counts) {
  fuzz::SetUpOnce();
  const proto::ProgramDesc& base = program.proto();
  const int num_ops = base.blocks(0).ops_size();
  for (int i = 0; i < num_ops; ++i) {
    const proto::OpDesc& op = base.blocks(0).ops(i);
    for (int a = 0; a < op.attrs_size(); ++a) {
      const std::string& name = op.attrs(a).name();
      if (name == "op_role" || name == "op_role_var" || name == "op_namescope" ||
          name == "op_callstack" || name == "op_device" || name == "with_quant_attr") {
        continue;  // bookkeeping the executors read through OpRole only
      }
      for (const Attr& variant : Variants(op.attrs(a))) {
        proto::ProgramDesc desc = base;
        *desc.mutable_blocks(0)->mutable_ops(i)->mutable_attrs(a) = variant;
        Program p(std::move(desc));
        const std::string where = what + " op #" + std::to_string(i) + " '" +
                                  op.type() + "' attr '" + name + "' = " +
                                  variant.ShortDebugString();
        SCOPED_TRACE(where);
        Status valid = ValidateProgram(p);
        if (!valid.ok()) {
          ++counts->rejected;
          EXPECT_NE(valid.message().find("op #"), std::string::npos)
              << valid.message();
          continue;
        }
        Status run = fuzz::RunOneSmallStep(p);
        if (run.ok()) {
          ++counts->ran;
        } else {
          ++counts->failed_run;
          EXPECT_NE(run.message().find("op #"), std::string::npos) << run.message();
        }
      }
    }
  }
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
  Torture(ex->startup, std::string(ExampleName(GetParam())) + " startup", &counts);
  std::printf("%s: %d variants rejected by validation, %d ran, %d failed to run\n",
              ExampleName(GetParam()), counts.rejected, counts.ran, counts.failed_run);
  EXPECT_GT(counts.rejected, 0);
  EXPECT_GT(counts.ran, 0);
}

INSTANTIATE_TEST_SUITE_P(Examples, AttributeExtremesTest,
                         ::testing::Values(ExampleKind::kFitALine, ExampleKind::kDigitsMlp,
                                           ExampleKind::kFashionMlp,
                                           ExampleKind::kFashionCnn),
                         [](const auto& info) { return std::string(ExampleName(info.param)); });

TEST(AttributeExtremesTest, PaddleTrainingProgram) {
  StatusOr<Program> main =
      Program::Load(std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_mlp_momentum/main.pdmodel");
  ASSERT_TRUE(main.ok()) << main.status().ToString();
  Counts counts;
  Torture(*main, "paddle_mlp_momentum main", &counts);
  EXPECT_GT(counts.rejected, 0);
  EXPECT_GT(counts.ran, 0);
}

}  // namespace
}  // namespace parex
