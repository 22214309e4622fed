// Pruning a trained program to an inference program, as Fluid's
// save_inference_model does it (Program._prune_with_input followed by
// _inference_optimize, prepend_feed_ops and append_fetch_ops).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "graph/ir/program.h"

namespace parex {

// Returns a new one-block program holding:
//  - one `feed` op per name of `feeds` (attr col = its index) reading the
//    FEED_MINIBATCH var `feed`, prepended one by one as Fluid does, so the
//    last column comes first;
//  - the forward ops of block 0 that the fetch targets depend on, in program
//    order, with `is_test` set true on every op whose schema has it
//    (batch_norm, dropout). Ops of the backward, optimizer and learning-rate
//    roles are never kept, so in-place updates of parameters do not pull the
//    training half back in; producers of fed vars are dropped (the feed
//    replaces them);
//  - one `fetch` op per name of `fetches` (attr col = its index) writing the
//    FETCH_LIST var `fetch`;
//  - the declarations of every var these ops use, copied from the program.
// Version fields of the program are kept.
// Errors: a feed or fetch name the program does not declare, no fetches, a
// program with sub-blocks, a fetch target that depends on a var that is
// neither fed, persistable nor computed by a kept op (e.g. the label of a
// loss), or a result that does not validate.
StatusOr<Program> Prune(const Program& program,
                        const std::vector<std::string>& feeds,
                        const std::vector<std::string>& fetches);

// `program` without the ops of block 0 whose outputs are all in `names`
// (a trainer's startup program without the initialisers of the tables it
// prefetches from parameter servers). No names: `program` as it is.
Program WithoutOpsMakingOnly(const Program& program,
                             const std::vector<std::string>& names);

}  // namespace parex
