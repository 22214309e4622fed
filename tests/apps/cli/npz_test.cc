// .npz archives: read what NumPy wrote (stored and deflated members;
// fixtures/npz/make_npz.py), and refuse broken or lying archives with an
// error naming the file and member.
#include "apps/cli/npz.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "tests/apps/cli/cli_test_util.h"

namespace parex {
namespace {

using ::testing::HasSubstr;
using testing::ReadFile;

std::string NpzFixture(const std::string& name) {
  return std::string(PAREX_TEST_FIXTURES_DIR) + "/npz/" + name;
}

TEST(NpzTest, ReadsStoredAndCompressedArchives) {
  for (const char* file : {"stored.npz", "compressed.npz"}) {
    SCOPED_TRACE(file);
    StatusOr<NamedArrays> arrays = ReadNpz(NpzFixture(file));
    ASSERT_TRUE(arrays.ok()) << arrays.status().ToString();
    ASSERT_EQ(arrays->size(), 2u);
    EXPECT_EQ((*arrays)[0].first, "x");
    EXPECT_EQ((*arrays)[0].second.dims(), (Dims{3, 2}));
    EXPECT_EQ(ToVector<float>((*arrays)[0].second),
              (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));
    EXPECT_EQ((*arrays)[1].first, "y");
    EXPECT_EQ(ToVector<int64_t>((*arrays)[1].second),
              (std::vector<int64_t>{10, 11, 12}));
    // The same from its bytes.
    StatusOr<NamedArrays> parsed = ParseNpz(ReadFile(NpzFixture(file)), file);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(ToVector<float>((*parsed)[0].second),
              ToVector<float>((*arrays)[0].second));
  }
}

TEST(NpzTest, BadArchivesAreNamed) {
  EXPECT_THAT(ReadNpz(NpzFixture("not_npy.npz")).status().message(),
              HasSubstr("member 'notes.txt' is not a .npy array"));
  EXPECT_THAT(ReadNpz(NpzFixture("twice.npz")).status().message(),
              HasSubstr("holds 'x' twice"));
  StatusOr<NamedArrays> missing = ReadNpz(NpzFixture("no_such.npz"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no_such.npz"));

  const std::string good = ReadFile(NpzFixture("stored.npz"));
  // Cut short anywhere: an error, never a crash.
  for (size_t cut : {size_t{0}, size_t{10}, good.size() / 2, good.size() - 5}) {
    StatusOr<NamedArrays> r = ParseNpz(good.substr(0, cut), "cut.npz");
    EXPECT_FALSE(r.ok()) << cut;
    EXPECT_THAT(r.status().message(), HasSubstr("cut.npz"));
  }
  // A member whose stated size is smaller than its data: the stated
  // uncompressed size of x.npy, in its local header (offset 22) and its
  // central-directory entry (offset 24), set to 16.
  std::string lying = good;
  auto patch = [&lying](size_t at) {
    const uint32_t size = 16;
    std::memcpy(&lying[at], &size, 4);
  };
  ASSERT_EQ(lying.compare(0, 4, "PK\x03\x04"), 0);
  patch(22);
  const size_t central = lying.find("PK\x01\x02");
  ASSERT_NE(central, std::string::npos);
  patch(central + 24);
  StatusOr<NamedArrays> r = ParseNpz(lying, "lying.npz");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("lying.npz: member 'x.npy'"));
}

}  // namespace
}  // namespace parex
