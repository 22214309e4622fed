// Tests of graph/ir/spec/broadcast_spec.cc: the elementwise ops' shape rule
// (numpy's at axis -1, Fluid's at an explicit axis), accepted and refused
// pairs, unknown extents, and the fixed-array form the kernels use.
#include "graph/ir/spec/broadcast_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace parex {
namespace {

using ::testing::HasSubstr;

struct Accepted {
  Dims x, y;
  int axis;
  Dims out;    // Out's dims
  Dims x_ext;  // X's extents along Out's dims
  Dims y_ext;  // Y's
};

std::string Name(const Dims& x, const Dims& y, int axis) {
  return DimsToString(x) + " " + DimsToString(y) + " axis " +
         std::to_string(axis);
}

TEST(ElementwiseBroadcastTest, AcceptedPairs) {
  const std::vector<Accepted> cases = {
      // numpy's rule at axis -1: either operand broadcasts.
      {{3, 1}, {1, 4}, -1, {3, 4}, {3, 1}, {1, 4}},
      {{4}, {2, 3, 4}, -1, {2, 3, 4}, {1, 1, 4}, {2, 3, 4}},
      {{2, 1, 4}, {3, 1}, -1, {2, 3, 4}, {2, 1, 4}, {1, 3, 1}},
      {{1}, {2, 3}, -1, {2, 3}, {1, 1}, {2, 3}},
      {{3}, {1, 1}, -1, {1, 3}, {1, 3}, {1, 1}},  // Paddle 2.6.2: [1,3]
      {{5, 1, 3}, {4, 1}, -1, {5, 4, 3}, {5, 1, 3}, {1, 4, 1}},
      {{0, 3}, {1, 3}, -1, {0, 3}, {0, 3}, {1, 3}},
      // ... and where only Y broadcasts it agrees with Fluid's.
      {{2, 3, 4}, {3, 4}, -1, {2, 3, 4}, {2, 3, 4}, {1, 3, 4}},
      {{2, 3, 4}, {3, 1}, -1, {2, 3, 4}, {2, 3, 4}, {1, 3, 1}},
      {{2, 3}, {2, 3}, -1, {2, 3}, {2, 3}, {2, 3}},
      // Fluid's rule at an explicit axis: Y (less trailing 1s) inside X.
      {{2, 3, 4}, {3}, 1, {2, 3, 4}, {2, 3, 4}, {1, 3, 1}},
      {{2, 3, 4}, {2}, 0, {2, 3, 4}, {2, 3, 4}, {2, 1, 1}},
      {{2, 3, 4}, {3, 1}, 1, {2, 3, 4}, {2, 3, 4}, {1, 3, 1}},
      {{2, 3}, {3, 1}, 1, {2, 3}, {2, 3}, {1, 3}},  // trailing 1 trimmed
      {{2, 1, 3}, {1, 3}, 1, {2, 1, 3}, {2, 1, 3}, {1, 1, 3}},
      {{3}, {1, 1}, 0, {3}, {3}, {1}},  // Y of one value fits anywhere
      {{2, 3}, {2, 3}, 1, {2, 3}, {2, 3}, {2, 3}},  // equal dims: any axis
  };
  for (const Accepted& c : cases) {
    SCOPED_TRACE(Name(c.x, c.y, c.axis));
    StatusOr<BroadcastSpec> spec = ElementwiseBroadcastSpec(c.x, c.y, c.axis);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->out, c.out);
    EXPECT_EQ(spec->x, c.x_ext);
    EXPECT_EQ(spec->y, c.y_ext);
    ElementwiseExtents e;
    ASSERT_TRUE(ElementwiseBroadcast(c.x, c.y, c.axis, &e).ok());
    EXPECT_EQ(Dims(e.out, e.out + e.rank), c.out);
    EXPECT_EQ(Dims(e.x, e.x + e.rank), c.x_ext);
    EXPECT_EQ(Dims(e.y, e.y + e.rank), c.y_ext);
  }
}

TEST(ElementwiseBroadcastTest, RefusedPairsNameBothShapesAndTheAxis) {
  struct Refused {
    Dims x, y;
    int axis;
    const char* why;
  };
  const std::vector<Refused> cases = {
      {{2, 3}, {4}, -1, "meet at dim 1"},
      {{2, 3}, {3, 2}, -1, "meet at dim 0"},
      {{2, 3, 4}, {2, 3}, -1, "meet at dim 1"},
      {{2, 3}, {2, 1, 4}, -1, "meet at dim 2"},
      {{0, 3}, {2, 3}, -1, "meet at dim 0"},
      // Fluid's rule: only Y broadcasts, and only inside X.
      {{3, 1}, {1, 4}, 0, "extent 4 != 1 at dim 1"},
      {{3}, {2, 3}, 0, "more dims than X"},
      {{2, 3}, {2}, 1, "extent 2 != 3 at dim 1"},
      {{2, 3}, {3}, 2, "more dims than X"},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(Name(c.x, c.y, c.axis));
    StatusOr<BroadcastSpec> spec = ElementwiseBroadcastSpec(c.x, c.y, c.axis);
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    const std::string& m = spec.status().message();
    EXPECT_THAT(m, HasSubstr("cannot be broadcast"));
    EXPECT_THAT(m, HasSubstr(DimsToString(c.x)));
    EXPECT_THAT(m, HasSubstr(DimsToString(c.y)));
    EXPECT_THAT(m, HasSubstr("axis " + std::to_string(c.axis)));
    EXPECT_THAT(m, HasSubstr(c.why));
  }
}

TEST(ElementwiseBroadcastTest, BadAxisAndRankAreRefused) {
  ElementwiseExtents e;
  Status s = ElementwiseBroadcast({2, 3}, {3}, -2, &e);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("axis -2 must be >= -1"));
  s = ElementwiseBroadcast(Dims(10, 1), {1}, -1, &e);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("rank 10"));
}

TEST(ElementwiseBroadcastTest, OperandNamesAppearInMessages) {
  StatusOr<BroadcastSpec> spec =
      ElementwiseBroadcastSpec({2, 3}, {4}, -1, "Out@GRAD", "Y");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(),
              HasSubstr("Out@GRAD [2,3] and Y [4] cannot be broadcast"));
}

TEST(ElementwiseBroadcastTest, UnknownExtentsPairWithAnything) {
  struct Case {
    Dims x, y;
    int axis;
    Dims out;
  };
  const std::vector<Case> cases = {
      {{-1, 1, 4}, {3, 1}, -1, {-1, 3, 4}},
      {{-1, 4}, {5, 4}, -1, {5, 4}},  // X's -1 can only be 5 or 1
      {{1, 4}, {-1, 4}, -1, {-1, 4}},
      {{-1, 4}, {-1, 1}, -1, {-1, 4}},
      {{-1, 3, 4}, {3}, 1, {-1, 3, 4}},  // Fluid: Out is X
      {{-1, 3}, {-1, 3}, 1, {-1, 3}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(Name(c.x, c.y, c.axis));
    StatusOr<BroadcastSpec> spec = ElementwiseBroadcastSpec(c.x, c.y, c.axis);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->out, c.out);
  }
  EXPECT_FALSE(ElementwiseBroadcastSpec({-1, 3}, {4}, -1).ok());
}

}  // namespace
}  // namespace parex
