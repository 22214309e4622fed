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
  EXPECT_EQ(Place::CUDA(0, 1).ToString(), "cuda:0.1");
  EXPECT_EQ(*ParsePlace("gpu:2"), Place::CUDA(2));
}

// Every place, slot or not, reads back as ToString writes it; equality and
// order see the slot.
TEST(PlaceTest, SlotsRoundTripAndOrder) {
  for (const Place& p :
       {Place::CPU(0), Place::CPU(7), Place::CUDA(0), Place::CUDA(0, 1),
        Place::CUDA(3, kMaxPlacesPerDevice - 1), Place::Sim(2),
        Place::CUDA(kMaxPlaceId)}) {
    StatusOr<Place> back = ParsePlace(p.ToString());
    ASSERT_TRUE(back.ok()) << p.ToString() << ": " << back.status().ToString();
    EXPECT_EQ(*back, p) << p.ToString();
    EXPECT_EQ(back->slot, p.slot);
  }
  EXPECT_NE(Place::CUDA(0), Place::CUDA(0, 1));
  EXPECT_LT(Place::CUDA(0), Place::CUDA(0, 1));
  EXPECT_LT(Place::CUDA(0, 5), Place::CUDA(1));
  EXPECT_FALSE(Place::CUDA(0, 1) < Place::CUDA(0, 1));
  EXPECT_EQ(ParsePlace("cuda:0.0")->ToString(), "cuda:0");
}

TEST(PlaceTest, RejectsBadText) {
  for (const char* bad :
       {"cpu", "cpu:", "cpu:-1", "tpu:0", "cpu:1x", "cuda:0.", "cuda:.1",
        "cuda:0.64", "cuda:0.-1", "cuda:0.1.2", "cuda:+1", "cuda: 1",
        "cuda:1025", "cuda:99999999999999999999"}) {
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
  EXPECT_EQ(ids("sim:2"), (std::vector<std::string>{"sim:0", "sim:1"}));
  for (const char* bad :
       {"",         "cpu:",      "cpu:0",      "cpu:-1",
        "cpu:1,1",  "cpu:1,",    "tpu:2",      "cpu:99999999999999999999",
        "cpu:2000", "cpu:1x",    "cpu:3-1",    "cpu:0-",
        "cpu:-",    "cpu:0-1,1", "cpu:0-2000", "cpu:+1",
        "cpu:0--1", "cpu:1-+2",  "cpu:0x2",    "sim:0x2",
        "cpu:0.1",  "cpu:all,1", "sim:all"}) {
    auto p = ParsePlaceList(bad, PlaceCounts{4, 2});
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(p.status().message().find("'" + std::string(bad) + "'"),
              std::string::npos)
        << p.status().message();
  }
}

// cuda lists name devices: a lone number is a device ordinal, xK puts K
// places on each device named, all is every visible device.
TEST(PlaceTest, CudaPlaceLists) {
  auto ids = [](const std::string& spec, PlaceCounts counts = {}) {
    std::vector<std::string> out;
    StatusOr<std::vector<Place>> places = ParsePlaceList(spec, counts);
    EXPECT_TRUE(places.ok()) << spec << ": " << places.status().ToString();
    if (!places.ok()) return out;
    for (const Place& p : *places) out.push_back(p.ToString());
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(ids("cuda"), V{"cuda:0"});
  EXPECT_EQ(ids("cuda:0"), V{"cuda:0"});
  EXPECT_EQ(ids("cuda:2"), V{"cuda:2"});
  EXPECT_EQ(ids("gpu:1"), V{"cuda:1"});
  EXPECT_EQ(ids("cuda:0,2"), (V{"cuda:0", "cuda:2"}));
  EXPECT_EQ(ids("cuda:0-3"), (V{"cuda:0", "cuda:1", "cuda:2", "cuda:3"}));
  EXPECT_EQ(ids("cuda:0x2"), (V{"cuda:0", "cuda:0.1"}));
  EXPECT_EQ(ids("cuda:0x1"), V{"cuda:0"});
  EXPECT_EQ(ids("cuda:3x3"), (V{"cuda:3", "cuda:3.1", "cuda:3.2"}));
  EXPECT_EQ(ids("cuda:0-1x2"), (V{"cuda:0", "cuda:0.1", "cuda:1", "cuda:1.1"}));
  EXPECT_EQ(ids("cuda:1x2,0"), (V{"cuda:1", "cuda:1.1", "cuda:0"}));
  EXPECT_EQ(ids("cuda:all", PlaceCounts{-1, 3}),
            (V{"cuda:0", "cuda:1", "cuda:2"}));
  EXPECT_EQ(ids("cuda:allx2", PlaceCounts{-1, 2}),
            (V{"cuda:0", "cuda:0.1", "cuda:1", "cuda:1.1"}));
  EXPECT_EQ(ids("cpu:all", PlaceCounts{3, -1}), (V{"cpu:0", "cpu:1", "cpu:2"}));
  EXPECT_EQ(ids("cuda:0x64").size(), 64u);

  // Each place of a list reads back through ParsePlace.
  StatusOr<std::vector<Place>> list = ParsePlaceList("cuda:0-2x3");
  ASSERT_TRUE(list.ok());
  for (const Place& p : *list) EXPECT_EQ(*ParsePlace(p.ToString()), p);

  for (const char* bad :
       {"cuda:",        "cuda:0x0",   "cuda:allx",
        "cuda:0x",      "cuda:x2",    "cuda:0xx2",
        "cuda:0x2x2",   "cuda:0x65",  "cuda:0x99999999999999999999",
        "cuda:0x-1",    "cuda:0x+2",  "cuda:0,0x2",
        "cuda:0-1,1x2", "cuda:1025",  "cuda:99999999999999999999",
        "cuda:0-99999", "cuda:all,0", "cuda:0,all",
        "cuda:alll",    "cuda:0.1",   "cuda:-1",
        "cuda:1-0",     "cuda:0,",    "cuda:,0",
        "cuda:0 ",      "cudax:0"}) {
    auto p = ParsePlaceList(bad, PlaceCounts{4, 2});
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(p.status().message().find("'" + std::string(bad) + "'"),
              std::string::npos)
        << p.status().message();
  }
}

// "all" needs a count: unknown (a topology file) is a bad list, zero (no
// device visible) a FailedPrecondition; both quote the list.
TEST(PlaceTest, AllNeedsACount) {
  StatusOr<std::vector<Place>> unknown = ParsePlaceList("cuda:all");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("'cuda:all'"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("not known"), std::string::npos);
  EXPECT_FALSE(ParsePlaceList("cpu:all").ok());

  StatusOr<std::vector<Place>> none =
      ParsePlaceList("cuda:allx2", PlaceCounts{8, 0});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("'cuda:allx2': no cuda device"),
            std::string::npos)
      << none.status().message();

  StatusOr<std::vector<Place>> huge =
      ParsePlaceList("cpu:all", PlaceCounts{kMaxPlaceId + 2, 0});
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("'cpu:all'"), std::string::npos);
}

}  // namespace
}  // namespace parex
