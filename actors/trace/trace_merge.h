// Merging the Chrome traces of a cluster's nodes into one timeline
// (DESIGN.md §4, §5; `parex trace merge`).
//
// Each node writes its own trace (`parex node --trace run-{node}.json`),
// its times relative to its recorder's start on its own steady clock. The
// trace's "metadata" names the node and carries what aligning needs:
// "parex_node", "parex_rank", "parex_origin_steady_ns" (the recorder's start
// on the node's steady clock) and "parex_clock_offset_us" (rank 0's steady
// clock minus the node's, measured at the handshake; 0 on rank 0). A span
// at `ts` µs of node n is at ts + origin_n/1000 + offset_n on rank 0's
// clock; the merged trace starts at the earliest of them.
//
// The merged trace has one process per node ("node 'a' (rank 0)"), one
// track per (place, actor kind) of the node, the node's message arrows
// (ids made unique per node), and arrows for the cross-node messages: each
// collective span (category "communication") is joined to the same
// collective (its label without the op number) of the same step on the
// next rank, the order Gloo's ring passes data.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace parex {

struct NodeTrace {
  std::string path;  // for messages
  std::string json;  // the file's contents
};

// Errors name the file: not JSON, no traceEvents, no parex node metadata,
// two traces of one rank.
StatusOr<std::string> MergeNodeTraces(const std::vector<NodeTrace>& traces);

}  // namespace parex
