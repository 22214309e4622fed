// Parameter-server training's exchanges for one node's part of a placed
// program (BuildStrategy::placed_node, graph/builder/placement.h): the
// gradients a trainer sends and in which messages, those a pserver
// receives, and the parameters that come back. Every node derives the same
// list from the same program, so each pair of nodes sends and receives its
// messages in the same order.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "graph/ir/program.h"
#include "graph/ssa/build_strategy.h"

namespace parex {

struct PlacedExchange {
  // One gradient of rows (lookup_table's is_sparse), and whether its
  // update changes the touched rows only (sgd, adam's lazy_mode), so that
  // only those rows come back; nothing comes back for a prefetched table.
  bool sparse = false;
  bool rows_back = false;
  bool prefetched = false;
  // This node's: a trainer's are every gradient of the message, a
  // pserver's those it holds (rows of them, for row blocks).
  std::vector<std::string> params, grads;
  // The op that makes the last of the gradients (a trainer sends after it).
  int producer = -1;
};

// Whether `op` runs on the node of `strategy` (InvalidArgument naming the op
// when it is not placed).
StatusOr<bool> RunsOnPlacedNode(const OpDesc& op,
                                const BuildStrategy& strategy);

// The exchanges in the order every node issues them: the gradients of
// pserver-held parameters in production order, dense ones in buckets of at
// most strategy.fuse_bucket_bytes and one dtype (each alone without
// fuse_all_reduce_ops; a larger one alone), a sparse one alone. A pserver
// keeps what it holds and drops an exchange with none. Errors: a trainer's
// parameter that trains but lives on no pserver.
StatusOr<std::vector<PlacedExchange>> PlanPlacedExchanges(
    const Block& block, const BuildStrategy& strategy);

// A table the trainers read through prefetch (distributed lookup table):
// a pserver-held parameter with a sparse gradient that every trainer op
// reads by lookup_table(_v2) (or its gradient, for the table's shape) and
// none writes. A trainer fetches the rows its lookups read (their `ids`)
// from the pservers before the first of them (program op `before`), so it
// never holds the table.
struct PlacedPrefetch {
  std::string table;
  std::vector<std::string> ids;
  int before = -1;
};

// The prefetched tables in the order every node serves them (by `before`);
// a pserver's, those it holds rows of. A table's lookups whose ids an op at
// or after `before` makes are read whole (not prefetched).
StatusOr<std::vector<PlacedPrefetch>> PlanPlacedPrefetches(
    const Block& block, const BuildStrategy& strategy);

// Whether `op` makes `grad` as rows: a SELECTED_ROWS var, or lookup_table's
// gradient with is_sparse.
bool IsSparseGradient(const OpDesc& op, const std::string& grad);

}  // namespace parex
