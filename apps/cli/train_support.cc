#include "apps/cli/train_support.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "base/digest.h"
#include "base/file_io.h"

namespace parex::cli {

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

std::string PinnedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "";
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  if (cpus.empty() ||
      cpus.size() >= static_cast<size_t>(std::thread::hardware_concurrency())) {
    return "";
  }
  return ", on " + CpuList(cpus);
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

std::string Duration(double seconds) {
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof(buf), "%.0fs", seconds);
  } else {
    std::snprintf(buf, sizeof(buf), "%dm%02ds", static_cast<int>(seconds) / 60,
                  static_cast<int>(seconds) % 60);
  }
  return buf;
}

double Mean(const Tensor& t) {
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    sum += t.dtype() == DType::kFP64 ? t.data<double>()[i] : t.data<float>()[i];
  }
  return t.numel() > 0 ? sum / t.numel() : 0;
}

std::string ParameterDigest(const Scope& scope,
                            std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::string bytes;
  for (const std::string& name : names) {
    const Variable* var = scope.FindLocalVar(name);
    if (var == nullptr || !var->IsTensor() || !var->GetTensor()->defined())
      continue;
    const Tensor& t = *var->GetTensor();
    bytes += name + '\0' + DTypeName(t.dtype()) + '\0';
    for (int64_t d : t.dims()) bytes += std::to_string(d) + ',';
    bytes += '\0';
    bytes.append(static_cast<const char*>(t.raw_data()), t.bytes());
  }
  return Sha256Hex(bytes);
}

std::string ForNode(std::string path, const std::string& node) {
  for (size_t at = path.find("{node}"); at != std::string::npos;
       at = path.find("{node}")) {
    path.replace(at, 6, node);
  }
  return path;
}

Status ResumeRun(const std::string& cmd, const std::string& dir, bool writer,
                 Cluster* cluster, const Program& main, CheckpointState* where,
                 Scope* scope) {
  if (writer) {
    PAREX_ASSIGN_OR_RETURN(FoundCheckpoint ckpt,
                           Resume(dir, main, *where, scope));
    where->step = ckpt.state.step;
    where->epoch = ckpt.state.epoch;
    where->batch = ckpt.state.batch;
    std::printf(
        "parex %s: resuming from %s: step %lld, epoch %lld, batch %lld\n",
        cmd.c_str(), ckpt.path.c_str(), static_cast<long long>(where->step),
        static_cast<long long>(where->epoch + 1),
        static_cast<long long>(where->batch));
  }
  if (cluster == nullptr) return Status::Ok();
  std::vector<double> at = {static_cast<double>(where->step),
                            static_cast<double>(where->epoch),
                            static_cast<double>(where->batch)};
  if (!writer) at.assign(3, 0.0);
  PAREX_RETURN_IF_ERROR(cluster->SumAcrossNodes(&at, "the resumed position"));
  where->step = static_cast<int64_t>(at[0]);
  where->epoch = static_cast<int64_t>(at[1]);
  where->batch = static_cast<int64_t>(at[2]);
  if (!writer) {
    std::printf(
        "parex %s: resuming with rank 0 at step %lld, epoch %lld, batch %lld\n",
        cmd.c_str(), static_cast<long long>(where->step),
        static_cast<long long>(where->epoch + 1),
        static_cast<long long>(where->batch));
  }
  return Status::Ok();
}

std::string HandshakeOptions(const TrainOptions& o, int64_t batch, int epochs,
                             const std::string& sync_bn,
                             const BuildStrategy& build) {
  return " --mode " + o.mode + " --batch " + std::to_string(batch) +
         " --epochs " + std::to_string(epochs) + " --steps " +
         (o.steps ? std::to_string(*o.steps) : "all") + " --seed " +
         std::to_string(o.seed) + (o.shuffle ? "" : " --no-shuffle") + sync_bn +
         " --fuse-buckets " +
         std::to_string(build.fuse_all_reduce_ops ? build.fuse_bucket_bytes
                                                  : 0) +
         " --checkpoint-every " + std::to_string(o.checkpoint_every);
}

void ExitUnlessEndedWithin(const std::string& cmd, const Status& status,
                           std::chrono::milliseconds grace) {
  std::thread([cmd, status, grace] {
    std::this_thread::sleep_for(grace);
    Fail(cmd, status);
    std::fflush(nullptr);
    std::_Exit(kExitRuntime);
  }).detach();
}

std::string MetricsLinesUpTo(const std::string& path, int64_t step) {
  std::string kept;
  StatusOr<std::string> before = ReadFileBytes(path);
  if (!before.ok()) return kept;
  size_t begin = 0;
  while (begin < before->size()) {
    const size_t end = before->find('\n', begin);
    if (end == std::string::npos) break;
    const std::string line = before->substr(begin, end - begin + 1);
    long long s = -1;
    if (std::sscanf(line.c_str(), "{\"step\": %lld", &s) == 1 && s <= step)
      kept += line;
    begin = end + 1;
  }
  return kept;
}

Status SetLearningRate(ParallelExecutor* pe,
                       const std::vector<std::string>& vars, double rate) {
  for (int p = 0; p < static_cast<int>(pe->places().size()); ++p) {
    for (const std::string& name : vars) {
      Variable* v = pe->local_scope(p)->FindVar(name);
      Tensor* t = v != nullptr ? v->GetMutableTensor() : nullptr;
      if (t == nullptr || t->numel() != 1 ||
          (t->dtype() != DType::kFP32 && t->dtype() != DType::kFP64)) {
        return InvalidArgument("--lr-schedule: '" + name + "' on " +
                               pe->places()[p].ToString() +
                               " is not a one-element float tensor");
      }
      if (t->dtype() == DType::kFP32) {
        t->data<float>()[0] = static_cast<float>(rate);
      } else {
        t->data<double>()[0] = rate;
      }
    }
  }
  return Status::Ok();
}

std::vector<FeedMap> NodeShareOfBatch(const FeedMap& feed, int64_t rows,
                                      int first_place, int n, int world) {
  std::vector<FeedMap> feeds(n);
  const int64_t chunk = rows / world;
  for (const auto& [name, value] : feed) {
    for (int p = 0; p < n; ++p) {
      const int q = first_place + p;
      const int64_t begin = q * chunk;
      feeds[p][name] =
          value.Slice(begin, q == world - 1 ? rows : begin + chunk);
    }
  }
  return feeds;
}

}  // namespace parex::cli
