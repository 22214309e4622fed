// The placement pass for parameter-server training (issue 32; the design is
// ../shared/seeds/004): it fills every op's and variable's PlaceGroup
// (graph/ir/place_group.h) of one training program instead of cutting it
// into a trainer and a pserver program as Fluid's distribute transpiler did.
//
//   - forward, backward and loss ops run on every trainer ("trainer"),
//     replicated over each trainer's places as in collective mode;
//   - each parameter's update op (op_role Optimize with a Param input) runs
//     where the parameter lives; parameters are dealt to the pservers by
//     size, largest first, each to the least loaded one; a parameter larger
//     than a pserver's fair share (all parameters' elements / pservers) is
//     split in row blocks over every pserver;
//   - the other optimizer and learning-rate ops run on the pservers whose
//     ops read what they make (so an LR schedule runs on each pserver that
//     needs its rate), on trainers when no pserver reads them;
//   - a variable lives where it is written (a parameter and its
//     accumulators where its update op runs), or, written by no op, with its
//     readers when they all run on pservers (the learning rate), else on the
//     trainers (feeds);
//   - what the program already places stays, and decides for what depends
//     on it (a placed parameter takes its update op along).
// Only the global block's ops are placed; a control-flow op's sub-blocks run
// where it does.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/ir/place_group.h"
#include "graph/ir/program.h"

namespace parex {

struct PlacementOptions {
  std::vector<std::string> pservers;  // in topology order (at least one)
  std::vector<std::string> trainers;  // to check user placements against
};

struct PlacementReport {
  struct Shard {
    std::string param;
    int64_t numel = 0;
    PlaceGroup group;   // pserver role; several nodes: row blocks
    bool user = false;  // placed by the program, not the pass
  };
  std::vector<Shard> shards;                // the parameters, in op order
  std::map<std::string, int64_t> elements;  // per pserver, row blocks shared
  int trainer_ops = 0;
  int pserver_ops = 0;
  int user_placed = 0;  // ops and variables the program had placed
};

// Places the global block of `program` (a training program: it needs
// update ops). Errors name the op, variable or node at fault.
StatusOr<PlacementReport> PlaceForParameterServers(
    Program* program, const PlacementOptions& options);

}  // namespace parex
