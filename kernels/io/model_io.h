// Saving and loading a program's persistable variables (parameters,
// optimizer state) in Paddle's formats, and loading Paddle inference models.
//
// Loads are all-or-nothing: every file is read and checked against the
// program's declarations before any variable of the scope changes.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "graph/ir/program.h"
#include "kernels/scope.h"

namespace parex {

// Names of block 0's persistable tensor variables (not the feed/fetch
// holders), sorted: the record order of a combined file.
std::vector<std::string> PersistableTensorNames(const Program& program);

// One file per variable, named after it, in `dir`; the persistables named
// in `skip` are neither read nor written (parameter-server training: what
// another node holds).
Status LoadPersistables(const Program& program, const std::string& dir,
                        Scope* scope,
                        const std::vector<std::string>& skip = {});
Status SavePersistables(const Program& program, const std::string& dir,
                        const Scope& scope,
                        const std::vector<std::string>& skip = {});
// One combined file (`__params__`, `*.pdiparams`).
Status LoadCombinedPersistables(const Program& program, const std::string& path,
                                Scope* scope);
Status SaveCombinedPersistables(const Program& program, const std::string& path,
                                const Scope& scope);

struct InferenceModel {
  Program program;
  std::vector<std::string> feed_names;   // by feed column
  std::vector<std::string> fetch_names;  // by fetch column
};

// A Paddle inference model directory: `__model__` plus one file per
// parameter (or `__params__` when present).
StatusOr<InferenceModel> LoadInferenceModel(const std::string& dir,
                                            Scope* scope);
// A model file and a combined parameter file (`*.pdmodel`, `*.pdiparams`).
StatusOr<InferenceModel> LoadInferenceModel(const std::string& model_path,
                                            const std::string& params_path,
                                            Scope* scope);

// Writes the inference model of a trained program as Fluid's
// save_inference_model does: `dir`/__model__ holds Prune(main, feeds,
// fetches) (graph/builder/prune.h) and one tensor file per persistable var that
// program uses, taken from `scope`. Creates `dir` when missing. What
// LoadInferenceModel(dir) reads back. `pruned`, when given, receives the
// saved program.
Status SaveInferenceModel(const std::string& dir,
                          const std::vector<std::string>& feeds,
                          const std::vector<std::string>& fetches,
                          const Program& main, const Scope& scope,
                          Program* pruned = nullptr);

// A training checkpoint: every persistable of the main program (parameters,
// batch-norm statistics, optimizer moments and beta powers, learning rate and
// step counter), one file per var in `dir` (created when missing). Resuming
// needs no startup run: LoadCheckpoint restores every persistable.
Status SaveCheckpoint(const Program& main, const std::string& dir,
                      const Scope& scope);
Status LoadCheckpoint(const Program& main, const std::string& dir,
                      Scope* scope);

// Feed and fetch targets of a program with feed/fetch ops, by column.
Status FeedFetchTargets(const Program& program, std::vector<std::string>* feeds,
                        std::vector<std::string>* fetches);

}  // namespace parex
