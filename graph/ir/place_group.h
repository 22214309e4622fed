// PlaceGroup (../shared/seeds/004, "Operator & Variable Placement"): where
// an op runs and where a variable lives when one program serves every role
// of a cluster. It is a STRING attribute, `place_group`, of ops and of
// variables, so a placed program stays one Paddle ProgramDesc:
//
//   "trainer"                 every trainer (each over its own places)
//   "trainer/t0"              trainer node t0 only
//   "pserver/ps0"             parameter server ps0
//   "pserver/ps0,ps1"         row blocks over ps0 and ps1, in that order
//                             (a variable's rows split evenly; an op runs on
//                             each for its block)
//   "pserver/ps0/cpu:0-1"     on those places of ps0 (as --places takes them)
//
// Nodes are named as the topology file names them. An op or variable
// without the attribute is unplaced: the placement pass
// (graph/builder/placement.h) decides, and what a user placed stays.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "graph/ir/program.h"

namespace parex {

inline constexpr char kPlaceGroupAttr[] = "place_group";

enum class NodeRole { kTrainer, kPserver };

const char* NodeRoleName(NodeRole role);  // "trainer", "pserver"

struct PlaceGroup {
  NodeRole role = NodeRole::kTrainer;
  std::vector<std::string> nodes;  // empty: every node of the role
  std::string places;              // empty: the node's places

  // Whether node `name` of `role` runs (or holds) what this group places.
  bool Includes(NodeRole node_role, std::string_view name) const;
  // The block index of node `name` in `nodes` (row blocks), else -1.
  int BlockOf(std::string_view name) const;

  std::string ToString() const;
  bool operator==(const PlaceGroup& o) const {
    return role == o.role && nodes == o.nodes && places == o.places;
  }
  bool operator!=(const PlaceGroup& o) const { return !(*this == o); }
};

// Parses the text form above. Errors say what is wrong with `text`.
StatusOr<PlaceGroup> ParsePlaceGroup(std::string_view text);

// The op's or variable's group; nullopt when it has none. A malformed
// attribute is an error naming the op or variable.
StatusOr<std::optional<PlaceGroup>> PlaceGroupOf(const OpDesc& op);
StatusOr<std::optional<PlaceGroup>> PlaceGroupOf(const VarDesc& var);

void SetPlaceGroup(OpDesc* op, const PlaceGroup& group);
void SetPlaceGroup(VarDesc* var, const PlaceGroup& group);

// Rows [begin, end) of block `block` of `blocks` when `rows` rows are split
// evenly (the first rows % blocks blocks one row longer).
std::pair<int64_t, int64_t> RowBlock(int64_t rows, int block, int blocks);

}  // namespace parex
