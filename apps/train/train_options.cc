#include "apps/train/train_options.h"

#include <cmath>

namespace parex::train {

Status CheckTrainOptions(const TrainOptions& o) {
  if (o.epochs && *o.epochs < 1) {
    return InvalidArgument("--epochs must be at least 1, not " +
                           std::to_string(*o.epochs));
  }
  if (o.threads && *o.threads < 1) {
    return InvalidArgument("--threads must be at least 1, not " +
                           std::to_string(*o.threads));
  }
  if (o.fuse_bucket_bytes && *o.fuse_bucket_bytes < 0) {
    return InvalidArgument(
        "--fuse-buckets must be 0 (off) or a byte count, not " +
        std::to_string(*o.fuse_bucket_bytes));
  }
  if (o.batch && *o.batch < 1) {
    return InvalidArgument("--batch must be at least 1, not " +
                           std::to_string(*o.batch));
  }
  if (o.lr && !(std::isfinite(*o.lr) && *o.lr > 0)) {
    return InvalidArgument("--lr must be a finite number above 0, not " +
                           std::to_string(*o.lr));
  }
  if (o.trace_from < 0) {
    return InvalidArgument("--trace-from must be at least 0, not " +
                           std::to_string(o.trace_from));
  }
  if (o.trace_steps < 1) {
    return InvalidArgument("--trace-steps must be at least 1, not " +
                           std::to_string(o.trace_steps));
  }
  if (o.steps && *o.steps < 1) {
    return InvalidArgument("--steps must be at least 1, not " +
                           std::to_string(*o.steps));
  }
  if (o.max_staleness < 0 || o.max_staleness > 1000) {
    return InvalidArgument("--max-staleness " +
                           std::to_string(o.max_staleness) +
                           " is not in 0..1000");
  }
  if (o.checkpoint_every < 0 || o.keep < 1) {
    return InvalidArgument(
        "--checkpoint-every must be at least 0 and --keep at "
        "least 1");
  }
  if (o.checkpoint_every > 0 && o.checkpoint_dir.empty()) {
    return InvalidArgument("--checkpoint-every needs --checkpoint-dir");
  }
  if (o.program.empty() &&
      (!o.startup.empty() || !o.params.empty() || !o.data.empty() ||
       !o.loss.empty() || !o.eval_data.empty() || !o.fetch.empty())) {
    return InvalidArgument(
        "--startup, --params, --data, --loss, --eval-data and "
        "--fetch go with --program");
  }
  if (o.program.empty() && !o.lr_schedule.empty()) {
    return InvalidArgument(
        "--lr-schedule goes with --program (the examples "
        "take --lr)");
  }
  if (!o.program.empty() && o.lr) {
    return InvalidArgument(
        "--lr is for the examples; a program's learning rate "
        "is its own");
  }
  return Status::Ok();
}

std::string ForNode(std::string path, const std::string& node) {
  for (size_t at = path.find("{node}"); at != std::string::npos;
       at = path.find("{node}")) {
    path.replace(at, 6, node);
  }
  return path;
}

}  // namespace parex::train
