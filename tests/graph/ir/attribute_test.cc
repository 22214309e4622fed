#include "graph/ir/attribute.h"

#include <gtest/gtest.h>

namespace parex {
namespace {

proto::OpDesc::Attr Make(AttrType type) {
  proto::OpDesc::Attr a;
  a.set_name("a");
  a.set_type(type);
  return a;
}

TEST(AttributeTest, IntBoolLongAreInterchangeable) {
  auto i = Make(proto::INT);
  i.set_i(1);
  EXPECT_TRUE(*ReadAttr<bool>(i));
  auto b = Make(proto::BOOLEAN);
  b.set_b(true);
  EXPECT_EQ(*ReadAttr<int>(b), 1);
  auto l = Make(proto::LONG);
  l.set_l(int64_t{1} << 40);
  EXPECT_EQ(*ReadAttr<int64_t>(l), int64_t{1} << 40);
  EXPECT_TRUE(AttrTypesCompatible(proto::BOOLEAN, proto::INT));
  EXPECT_TRUE(AttrTypesCompatible(proto::INTS, proto::LONGS));
  EXPECT_FALSE(AttrTypesCompatible(proto::INT, proto::STRING));
  EXPECT_FALSE(AttrTypesCompatible(proto::FLOAT, proto::INT));
}

TEST(AttributeTest, ListsConvert) {
  auto ints = Make(proto::INTS);
  ints.add_ints(3);
  ints.add_ints(-1);
  EXPECT_EQ(*ReadAttr<std::vector<int64_t>>(ints),
            (std::vector<int64_t>{3, -1}));
  auto f64 = Make(proto::FLOAT64S);
  f64.add_float64s(0.5);
  EXPECT_EQ(*ReadAttr<std::vector<float>>(f64), std::vector<float>{0.5f});
}

TEST(AttributeTest, WrongTypeNamesAttributeAndTypes) {
  auto s = Make(proto::STRING);
  s.set_s("x");
  auto v = ReadAttr<int>(s);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("'a'"), std::string::npos);
  EXPECT_NE(v.status().message().find("STRING"), std::string::npos);
  EXPECT_NE(v.status().message().find("INT"), std::string::npos);
}

TEST(AttributeTest, WriteThenReadEachType) {
  proto::OpDesc::Attr a;
  a.set_name("a");
  WriteAttr<float>(&a, 2.5f);
  EXPECT_EQ(a.type(), proto::FLOAT);
  EXPECT_EQ(*ReadAttr<float>(a), 2.5f);
  WriteAttr<std::vector<std::string>>(&a, {"w", "w@GRAD"});
  EXPECT_EQ(a.type(), proto::STRINGS);
  EXPECT_EQ(a.name(), "a");
  EXPECT_EQ(ReadAttr<std::vector<std::string>>(a)->at(1), "w@GRAD");
  EXPECT_EQ(a.f(), 0.0f);  // the old value is cleared
}

}  // namespace
}  // namespace parex
