// Training checkpoints of parex train / node (--checkpoint-dir, --resume),
// the file format and Checkpointer, a run's use of it:
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
#include <vector>

#include "actors/cluster/cluster.h"
#include "base/status.h"
#include "graph/ir/program.h"
#include "kernels/scope.h"

namespace parex::train {

struct CheckpointState {
  int64_t step = 0;   // steps run
  int64_t epoch = 0;  // the next batch to run: batch `batch` of epoch `epoch`
  int64_t batch = 0;
  std::string program;  // fingerprint of the programs (sha256)
  std::string options;  // the options that shape training (a resume must match)
};

// Writes `scope`'s persistables of `main` (but those in `skip`: with
// parameter servers, what the pservers write themselves) and `state` as
// DIR/ckpt-<step>, then keeps the newest `keep` checkpoints (keep >= 1).
// Returns the path.
StatusOr<std::string> WriteCheckpoint(
    const std::string& dir, const Program& main, const Scope& scope,
    const CheckpointState& state, int keep,
    const std::vector<std::string>& skip = {});

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
                                 const CheckpointState& want, Scope* scope,
                                 const std::vector<std::string>& skip = {});

// A run's checkpoints: where it starts (the position a --resume found, or
// the beginning) and writing the state after a step into --checkpoint-dir.
// Only the writer (rank 0) reads and writes checkpoints; across nodes the
// others take its position from it. Not thread-safe.
class Checkpointer {
 public:
  // `run`: what a checkpoint of this run must hold to be resumed here (its
  // program fingerprint and options; the position is ignored). `dir`: the
  // --checkpoint-dir of this node ("": none), keeping the newest `keep`.
  Checkpointer(CheckpointState run, std::string dir, int keep, bool writer);

  // --resume: the writer reads the newest complete checkpoint in `dir` into
  // `scope` and position() (the other nodes may not see its directory);
  // across nodes (`cluster` set) every node takes rank 0's position from a
  // sum only rank 0 adds to, and its persistables from the broadcast that
  // follows. Prints where the run resumes, as `cmd`.
  Status Resume(const std::string& cmd, const std::string& dir,
                Cluster* cluster, const Program& main, Scope* scope,
                const std::vector<std::string>& skip = {});

  // The step, epoch and batch training starts from.
  const CheckpointState& position() const { return run_; }
  // Whether Write writes (a --checkpoint-dir, and the writer).
  bool writes() const { return !dir_.empty() && writer_; }
  // The checkpoint of the state after step `step` whose next batch is
  // `next_batch` of `epoch` (an epoch of `batches`: past its end is the next
  // epoch's first); the path written, "" when !writes().
  StatusOr<std::string> Write(int64_t step, int64_t epoch, int64_t next_batch,
                              int64_t batches, const Program& main,
                              const Scope& scope,
                              const std::vector<std::string>& skip = {}) const;
  const std::string& dir() const { return dir_; }
  int keep() const { return keep_; }

 private:
  CheckpointState run_;
  std::string dir_;
  int keep_;
  bool writer_;
};

}  // namespace parex::train
