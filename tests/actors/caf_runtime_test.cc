#include "actors/caf_runtime.h"

#include <gtest/gtest.h>

namespace parex {
namespace {

TEST(CafRuntimeTest, BuiltAgainstCaf017) {
  EXPECT_EQ(CafVersion().rfind("0.17.", 0), 0u) << CafVersion();
}

TEST(CafRuntimeTest, ActorSystemSchedulesARequest) {
  EXPECT_EQ(PingActorSystem(2, 20, 22), 42);
}

}  // namespace
}  // namespace parex
