// Tests of the prefetched tables of a placed program (graph/ssa/
// placed_exchanges.h, the builder's "prefetch" handles): a sparse embedding
// table on the pservers that the trainers read by lookups only is
// prefetched before the lookup on every trainer place, answered first of
// all on its pservers, and never comes back after the update; a dense one
// (no is_sparse) is not.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/check.h"
#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/builder/placement.h"
#include "graph/builder/program_builder.h"
#include "graph/ssa/multi_device_builder.h"
#include "graph/ssa/placed_exchanges.h"

namespace parex {
namespace {

// ids [4, 1] -> embedding "emb" [1000, 8] -> fc 10 -> softmax cross
// entropy, SGD; placed over pservers ps0, ps1 (the table in row blocks when
// large enough) and trainers t0, t1.
struct Placed {
  Program main;
  std::string loss;
};

Placed PlacedEmbedding(bool sparse) {
  Program main, startup;
  ProgramBuilder b(&main, &startup);
  auto ids = layers::Data(b, "ids", {4, 1}, DType::kInt64);
  auto label = layers::Data(b, "label", {1}, DType::kInt64);
  EXPECT_TRUE(ids.ok() && label.ok());
  ParamAttr emb_attr;
  emb_attr.name = "emb";
  auto emb = layers::Embedding(b, *ids, 1000, 8, emb_attr, -1, sparse);
  EXPECT_TRUE(emb.ok()) << emb.status().ToString();
  layers::FcOptions out;
  out.size = 10;
  auto logits = layers::Fc(b, *emb, out);
  EXPECT_TRUE(logits.ok()) << logits.status().ToString();
  auto loss =
      layers::Mean(b, *layers::SoftmaxWithCrossEntropy(b, *logits, *label));
  EXPECT_TRUE(loss.ok()) << loss.status().ToString();
  SGDOptimizer sgd(LearningRate::Constant(0.1));
  EXPECT_TRUE(sgd.Minimize(b, *loss).ok());
  PlacementOptions options;
  options.pservers = {"ps0", "ps1"};
  options.trainers = {"t0", "t1"};
  StatusOr<PlacementReport> placed = PlaceForParameterServers(&main, options);
  EXPECT_TRUE(placed.ok()) << placed.status().ToString();
  return {main, loss.ok() ? (*loss)->name() : ""};
}

SsaGraph BuildPart(const Placed& placed, const std::string& node, bool pserver,
                   int places) {
  BuildStrategy s;
  s.placed_node = node;
  s.placed_pserver = pserver;
  std::vector<Place> p;
  for (int i = 0; i < places; ++i) p.push_back(Place::CPU(i));
  StatusOr<SsaGraph> g =
      BuildMultiDeviceGraph(placed.main, p, placed.loss, s, {});
  PAREX_CHECK(g.ok(), node + ": " + g.status().ToString());
  return std::move(*g);
}

bool Names(const SsaOp& op, const std::string& var) {
  return std::find(op.var_names.begin(), op.var_names.end(), var) !=
         op.var_names.end();
}

TEST(PlacedPrefetchTest, ASparseTableIsPrefetchedBeforeItsLookup) {
  const Placed placed = PlacedEmbedding(true);
  const Program& main = placed.main;
  StatusOr<std::vector<PlacedPrefetch>> all =
      PlanPlacedPrefetches(main.global_block(), BuildStrategy());
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].table, "emb");
  EXPECT_EQ((*all)[0].ids, std::vector<std::string>{"ids"});
  EXPECT_EQ(main.global_block().op((*all)[0].before).type(), "lookup_table");

  // A trainer of 2 places: the prefetch writes the table on both, before
  // each place's lookup; no receive brings the table back.
  const SsaGraph trainer = BuildPart(placed, "t0", false, 2);
  int prefetch = -1;
  for (const SsaOp& op : trainer.ops()) {
    if (op.type == "prefetch") {
      EXPECT_EQ(prefetch, -1) << "one prefetch";
      prefetch = op.id;
      EXPECT_EQ(op.var_names, (std::vector<std::string>{"emb", "ids"}));
    }
    if (op.type == "recv") {
      EXPECT_FALSE(Names(op, "emb"));
    }
  }
  ASSERT_GE(prefetch, 0);
  int lookups = 0;
  for (const SsaOp& op : trainer.ops()) {
    if (op.kind != SsaOpKind::kComputation || op.type != "lookup_table") {
      continue;
    }
    ++lookups;
    EXPECT_GT(op.id, prefetch);
    bool reads_prefetched = false;
    for (int in : op.inputs) {
      reads_prefetched =
          reads_prefetched || (trainer.var(in).name == "emb" &&
                               trainer.var(in).generator == prefetch);
    }
    EXPECT_TRUE(reads_prefetched) << "place " << op.place;
  }
  EXPECT_EQ(lookups, 2);

  // A pserver holding rows of it answers the prefetch first of all, and
  // sends none of it back after the update.
  for (const char* ps : {"ps0", "ps1"}) {
    const SsaGraph pserver = BuildPart(placed, ps, true, 1);
    const StatusOr<std::vector<PlacedPrefetch>> mine =
        PlanPlacedPrefetches(main.global_block(), [&] {
          BuildStrategy s;
          s.placed_node = ps;
          s.placed_pserver = true;
          return s;
        }());
    ASSERT_TRUE(mine.ok());
    const bool holds = !mine->empty();
    if (holds) {
      ASSERT_FALSE(pserver.ops().empty());
      EXPECT_EQ(pserver.op(0).type, "prefetch") << ps;
      EXPECT_EQ(pserver.op(0).var_names, std::vector<std::string>{"emb"});
    }
    for (const SsaOp& op : pserver.ops()) {
      if (op.type == "send") {
        EXPECT_FALSE(Names(op, "emb")) << ps;
      }
    }
  }
}

TEST(PlacedPrefetchTest, ADenseTableIsNotPrefetched) {
  const Placed placed = PlacedEmbedding(false);
  const Program& main = placed.main;
  StatusOr<std::vector<PlacedPrefetch>> all =
      PlanPlacedPrefetches(main.global_block(), BuildStrategy());
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_TRUE(all->empty());
  const SsaGraph trainer = BuildPart(placed, "t0", false, 1);
  bool received = false;
  for (const SsaOp& op : trainer.ops()) {
    EXPECT_NE(op.type, "prefetch");
    received = received || (op.type == "recv" && Names(op, "emb"));
  }
  EXPECT_TRUE(received);
}

}  // namespace
}  // namespace parex
