#include "base/place.h"

#include <gtest/gtest.h>

namespace parex {
namespace {

TEST(PlaceTest, ParsesAndPrints) {
  auto p = ParsePlace("cuda:3");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->is_cuda());
  EXPECT_EQ(p->id, 3);
  EXPECT_EQ(p->ToString(), "cuda:3");
  EXPECT_EQ(ParsePlace("cpu:0")->ToString(), "cpu:0");
  EXPECT_EQ(Place::CPU(1), *ParsePlace("cpu:1"));
  EXPECT_LT(Place::CPU(5), Place::CUDA(0));
}

TEST(PlaceTest, RejectsBadText) {
  for (const char* bad : {"cpu", "cpu:", "cpu:-1", "tpu:0", "cpu:1x"}) {
    auto p = ParsePlace(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find(bad), std::string::npos);
  }
}

}  // namespace
}  // namespace parex
