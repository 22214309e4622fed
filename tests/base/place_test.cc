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

TEST(PlaceTest, PlaceLists) {
  auto ids = [](const std::string& spec) {
    std::vector<std::string> out;
    StatusOr<std::vector<Place>> places = ParsePlaceList(spec);
    EXPECT_TRUE(places.ok()) << spec << ": " << places.status().ToString();
    if (!places.ok()) return out;
    for (const Place& p : *places) out.push_back(p.ToString());
    return out;
  };
  EXPECT_EQ(ids("cpu"), (std::vector<std::string>{"cpu:0"}));
  EXPECT_EQ(ids("cpu:3"),
            (std::vector<std::string>{"cpu:0", "cpu:1", "cpu:2"}));
  EXPECT_EQ(ids("cpu:0,2"), (std::vector<std::string>{"cpu:0", "cpu:2"}));
  EXPECT_EQ(ids("cuda:1,0"), (std::vector<std::string>{"cuda:1", "cuda:0"}));
  EXPECT_EQ(ids("cpu:0-2"),
            (std::vector<std::string>{"cpu:0", "cpu:1", "cpu:2"}));
  EXPECT_EQ(ids("cpu:2-2"), (std::vector<std::string>{"cpu:2"}));
  EXPECT_EQ(ids("cpu:0,2-3"),
            (std::vector<std::string>{"cpu:0", "cpu:2", "cpu:3"}));
  for (const char* bad :
       {"", "cpu:", "cpu:0", "cpu:-1", "cpu:1,1", "cpu:1,", "tpu:2",
        "cpu:99999999999999999999", "cpu:2000", "cpu:1x", "cpu:3-1", "cpu:0-",
        "cpu:-", "cpu:0-1,1", "cpu:0-2000", "cpu:+1", "cpu:0--1", "cpu:1-+2"}) {
    auto p = ParsePlaceList(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("'" + std::string(bad) + "'"),
              std::string::npos)
        << p.status().message();
  }
}

}  // namespace
}  // namespace parex
