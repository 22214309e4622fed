#include "apps/train/train_options.h"

#include <cmath>
#include <optional>
#include <string>

namespace parex::train {

namespace {

// "--flag must be at least `least`, not v" for a value given below it.
template <typename T>
Status AtLeast(const char* flag, const std::optional<T>& v, T least) {
  if (!v || *v >= least) return Status::Ok();
  return InvalidArgument(std::string(flag) + " must be at least " +
                         std::to_string(least) + ", not " + std::to_string(*v));
}

// Each number in its range.
Status CheckCounts(const TrainOptions& o) {
  PAREX_RETURN_IF_ERROR(AtLeast("--epochs", o.epochs, 1));
  PAREX_RETURN_IF_ERROR(AtLeast("--threads", o.threads, 1));
  if (o.fuse_bucket_bytes && *o.fuse_bucket_bytes < 0) {
    return InvalidArgument(
        "--fuse-buckets must be 0 (off) or a byte count, not " +
        std::to_string(*o.fuse_bucket_bytes));
  }
  PAREX_RETURN_IF_ERROR(AtLeast("--batch", o.batch, int64_t{1}));
  if (o.lr && !(std::isfinite(*o.lr) && *o.lr > 0)) {
    return InvalidArgument("--lr must be a finite number above 0, not " +
                           std::to_string(*o.lr));
  }
  PAREX_RETURN_IF_ERROR(AtLeast(
      "--trace-from", std::optional<int64_t>(o.trace_from), int64_t{0}));
  PAREX_RETURN_IF_ERROR(
      AtLeast("--trace-steps", std::optional<int>(o.trace_steps), 1));
  PAREX_RETURN_IF_ERROR(AtLeast("--steps", o.steps, int64_t{1}));
  if (o.max_staleness < 0 || o.max_staleness > 1000) {
    return InvalidArgument("--max-staleness " +
                           std::to_string(o.max_staleness) +
                           " is not in 0..1000");
  }
  if (o.checkpoint_every < 0 || o.keep < 1) {
    return InvalidArgument(
        "--checkpoint-every must be at least 0 and --keep at least 1");
  }
  return Status::Ok();
}

// Options that need, or exclude, another.
Status CheckCombinations(const TrainOptions& o) {
  if (o.checkpoint_every > 0 && o.checkpoint_dir.empty()) {
    return InvalidArgument("--checkpoint-every needs --checkpoint-dir");
  }
  const bool program = !o.program.empty();
  if (!program &&
      (!o.startup.empty() || !o.params.empty() || !o.data.empty() ||
       !o.loss.empty() || !o.eval_data.empty() || !o.fetch.empty())) {
    return InvalidArgument(
        "--startup, --params, --data, --loss, --eval-data and "
        "--fetch go with --program");
  }
  if (!program && !o.lr_schedule.empty()) {
    return InvalidArgument(
        "--lr-schedule goes with --program (the examples take --lr)");
  }
  if (program && o.lr) {
    return InvalidArgument(
        "--lr is for the examples; a program's learning rate is its own");
  }
  return Status::Ok();
}

}  // namespace

Status CheckTrainOptions(const TrainOptions& o) {
  PAREX_RETURN_IF_ERROR(CheckCounts(o));
  return CheckCombinations(o);
}

std::string ForNode(std::string path, const std::string& node) {
  for (size_t at = path.find("{node}"); at != std::string::npos;
       at = path.find("{node}")) {
    path.replace(at, 6, node);
  }
  return path;
}

}  // namespace parex::train
