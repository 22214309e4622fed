// Training checkpoints of parex train / node (--checkpoint-dir, --resume):
// DIR/ckpt-<step>/ holds every persistable of the main program in Paddle's
// tensor format (one file per var, loadable by Paddle's load_vars) and
// `parex_state`, where the run stood. A checkpoint is written into
// DIR/.tmp-ckpt-<step> and renamed into place, so a directory named
// ckpt-<step> is always complete: a run killed mid-write leaves a .tmp-*
// that the next write or resume ignores and removes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "graph/ir/program.h"
#include "kernels/scope.h"

namespace parex::cli {

struct CheckpointState {
  int64_t step = 0;   // steps run
  int64_t epoch = 0;  // the next batch to run: batch `batch` of epoch `epoch`
  int64_t batch = 0;
  std::string program;  // fingerprint of the programs (sha256)
  std::string options;  // the options that shape training (a resume must match)
};

// Writes `scope`'s persistables of `main` and `state` as DIR/ckpt-<step>,
// then keeps the newest `keep` checkpoints (keep >= 1). Returns the path.
StatusOr<std::string> WriteCheckpoint(const std::string& dir,
                                      const Program& main, const Scope& scope,
                                      const CheckpointState& state, int keep);

struct FoundCheckpoint {
  std::string path;
  CheckpointState state;
};
// The newest complete checkpoint in DIR; nullopt when there is none. Errors:
// DIR unreadable, a checkpoint whose state file is corrupt (named).
StatusOr<std::optional<FoundCheckpoint>> NewestCheckpoint(
    const std::string& dir);

// --resume DIR: loads the newest complete checkpoint's persistables of
// `main` into `scope` and returns its state. Errors: none there, or one
// written by another program or with other options than `want` holds.
StatusOr<FoundCheckpoint> Resume(const std::string& dir, const Program& main,
                                 const CheckpointState& want, Scope* scope);

}  // namespace parex::cli
