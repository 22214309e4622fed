// parex infer's chunks (apps/cli/infer_chunks.h): the chunk sizes a batch
// splits into, and a chunked run returning what one run of the whole batch
// returns, or running whole where rows cannot be split (a fetch that mixes
// rows, a feed with LoD).
#include "apps/cli/infer_chunks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "graph/builder/examples.h"
#include "kernels/example_feed.h"
#include "kernels/reference_executor.h"

namespace parex::cli {
namespace {

TEST(ChunkRowsTest, EqualChunksOfAtMostTheRowsPerPlace) {
  EXPECT_EQ(ChunkRows(256, 1, 32), 32);
  EXPECT_EQ(ChunkRows(256, 2, 32), 64);  // 32 rows per place
  EXPECT_EQ(ChunkRows(100, 1, 32), 25);  // 4 equal chunks
  EXPECT_EQ(ChunkRows(96, 2, 32), 48);   // 24 per place: 2 chunks
  EXPECT_EQ(ChunkRows(102, 1, 32), 17);  // 6 chunks of 17
  EXPECT_EQ(ChunkRows(97, 1, 32), 97);   // prime: no equal chunks, whole
  EXPECT_EQ(ChunkRows(33, 1, 32), 33);   // no size in 16..32 divides it
  EXPECT_EQ(ChunkRows(32, 1, 32), 32);   // not larger than a chunk
  EXPECT_EQ(ChunkRows(64, 2, 32), 64);
  EXPECT_EQ(ChunkRows(256, 1, 0), 256);  // --chunk-rows 0: whole
  EXPECT_EQ(ChunkRows(256, 0, 32), 32);  // no places counts as one
  EXPECT_EQ(ChunkRows(5, 4, 1), 5);      // 5 rows, 4 places: whole
}

// The digits MLP without its backward (an inference program): its
// prediction has a row per input row; its loss (a mean) mixes rows.
class ChunkedRunnerTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    ExampleOptions options;
    options.minimize = false;
    StatusOr<ExampleProgram> ex =
        BuildExample(ExampleKind::kDigitsMlp, options);
    ASSERT_TRUE(ex.ok()) << ex.status().ToString();
    ex_ = std::move(*ex);
    ReferenceExecutor startup;
    ASSERT_TRUE(startup.Run(ex_.startup, &scope_, {}, {}).ok());
    std::vector<Place> places;
    for (int p = 0; p < GetParam(); ++p) places.push_back(Place::CPU(p));
    auto pe = ParallelExecutor::Create(places, ex_.main, "", &scope_);
    ASSERT_TRUE(pe.ok()) << pe.status().ToString();
    pe_ = std::move(*pe);
    feed_ = RandomExampleFeed(ex_, 64, 34);
  }

  ExampleProgram ex_;
  Scope scope_;
  std::unique_ptr<ParallelExecutor> pe_;
  FeedMap feed_;
};

void ExpectSameValues(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dims(), want.dims());
  ASSERT_EQ(got.dtype(), DType::kFP32);
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    worst = std::max<double>(
        worst, std::abs(got.data<float>()[i] - want.data<float>()[i]));
  }
  EXPECT_LT(worst, 1e-6);
}

TEST_P(ChunkedRunnerTest, RowsRunInChunksAsOneRun) {
  const int64_t chunk = ChunkRows(64, GetParam(), 8);
  ASSERT_EQ(chunk, 8 * GetParam());
  auto whole = pe_->Run(feed_, {ex_.prediction});
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ChunkedRunner runner(chunk);
  for (int run = 0; run < 2; ++run) {
    auto chunked = runner.Run(*pe_, feed_, {ex_.prediction});
    ASSERT_TRUE(chunked.ok()) << chunked.status().ToString();
    EXPECT_TRUE(runner.chunked());
    ASSERT_EQ(chunked->size(), 1u);
    EXPECT_EQ((*chunked)[0].dims(), (Dims{64, 10}));
    ExpectSameValues((*chunked)[0], (*whole)[0]);
  }
}

// The loss comes back with one value per place, not a row per input row:
// the first chunk shows it, and the runner runs the whole batch instead,
// then and from then on.
TEST_P(ChunkedRunnerTest, AFetchThatMixesRowsRunsTheWholeBatch) {
  auto whole = pe_->Run(feed_, {ex_.prediction, ex_.loss});
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ChunkedRunner runner(ChunkRows(64, GetParam(), 8));
  for (int run = 0; run < 2; ++run) {
    auto got = runner.Run(*pe_, feed_, {ex_.prediction, ex_.loss});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_FALSE(runner.chunked());
    ASSERT_EQ(got->size(), 2u);
    ExpectSameValues((*got)[0], (*whole)[0]);
    ExpectSameValues((*got)[1], (*whole)[1]);
  }
  // Fetching only rows again: this runner stays whole, a new one chunks.
  ASSERT_TRUE(runner.Run(*pe_, feed_, {ex_.prediction}).ok());
  EXPECT_FALSE(runner.chunked());
}

// Feeds that cannot be cut into row ranges run whole: one with LoD, and a
// feed whose rows differ from the others'.
TEST_P(ChunkedRunnerTest, FeedsThatCannotBeCutRunWhole) {
  ChunkedRunner runner(ChunkRows(64, GetParam(), 8));
  FeedMap with_lod = feed_;
  Tensor& x = with_lod.at(ex_.input);
  LoD lod = {{}};
  for (int64_t r = 0; r <= x.dim(0); r += 16) lod[0].push_back(r);
  x.set_lod(lod);
  auto got = runner.Run(*pe_, with_lod, {ex_.prediction});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE(runner.chunked());
  auto plain = runner.Run(*pe_, feed_, {ex_.prediction});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_TRUE(runner.chunked());
  ExpectSameValues((*plain)[0], (*got)[0]);
}

INSTANTIATE_TEST_SUITE_P(Places, ChunkedRunnerTest, ::testing::Values(1, 2));

}  // namespace
}  // namespace parex::cli
