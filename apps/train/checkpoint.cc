#include "apps/train/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "base/file_io.h"
#include "kernels/io/model_io.h"

namespace parex::train {
namespace fs = std::filesystem;
namespace {

constexpr char kStateFile[] = "parex_state";

// "ckpt-<step>" -> step; -1 for other names.
int64_t StepOf(const std::string& name) {
  if (name.rfind("ckpt-", 0) != 0 || name.size() == 5) return -1;
  int64_t step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (INT64_MAX - 9) / 10)
      return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

std::string Serialize(const CheckpointState& s) {
  std::ostringstream out;
  out << "step " << s.step << "\nepoch " << s.epoch << "\nbatch " << s.batch
      << "\nprogram " << s.program << "\noptions " << s.options << "\n";
  return out.str();
}

StatusOr<CheckpointState> Parse(const std::string& text,
                                const std::string& path) {
  std::map<std::string, std::string> fields;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    fields[line.substr(0, sp)] = line.substr(sp + 1);
  }
  CheckpointState s;
  for (auto [key, out] : {std::pair<const char*, int64_t*>{"step", &s.step},
                          {"epoch", &s.epoch},
                          {"batch", &s.batch}}) {
    auto it = fields.find(key);
    char* end = nullptr;
    errno = 0;
    const long long v =
        it == fields.end() ? -1 : std::strtoll(it->second.c_str(), &end, 10);
    if (it == fields.end() || errno != 0 || *end != '\0' || v < 0) {
      return InvalidArgument("checkpoint state '" + path + "': no valid '" +
                             key + "'");
    }
    *out = v;
  }
  s.program = fields["program"];
  s.options = fields["options"];
  return s;
}

}  // namespace

StatusOr<std::string> WriteCheckpoint(const std::string& dir,
                                      const Program& main, const Scope& scope,
                                      const CheckpointState& state, int keep,
                                      const std::vector<std::string>& skip) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return IoError("--checkpoint-dir: cannot create '" + dir +
                   "': " + ec.message());
  const std::string name = "ckpt-" + std::to_string(state.step);
  const fs::path tmp = fs::path(dir) / (".tmp-" + name);
  const fs::path final_path = fs::path(dir) / name;
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec)
    return IoError("--checkpoint-dir: cannot create '" + tmp.string() +
                   "': " + ec.message());
  PAREX_RETURN_IF_ERROR(SavePersistables(main, tmp.string(), scope, skip)
                            .WithContext("checkpoint " + name));
  // The state last: with it the directory is complete.
  PAREX_RETURN_IF_ERROR(
      WriteFileBytes((tmp / kStateFile).string(), Serialize(state)));
  fs::remove_all(final_path, ec);  // a checkpoint of the same step, rewritten
  fs::rename(tmp, final_path, ec);
  if (ec) {
    return IoError("--checkpoint-dir: cannot rename '" + tmp.string() +
                   "' to '" + final_path.string() + "': " + ec.message());
  }
  // Keep the newest `keep`; remove what interrupted writes left.
  std::vector<std::pair<int64_t, fs::path>> complete;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string n = entry.path().filename().string();
    // Its own interrupted writes only (a pserver's part is
    // .tmp-ckpt-<step>.<node>, its writer's to remove).
    if (n.rfind(".tmp-", 0) == 0 && StepOf(n.substr(5)) >= 0) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    } else if (StepOf(n) >= 0 && fs::exists(entry.path() / kStateFile)) {
      complete.emplace_back(StepOf(n), entry.path());
    }
  }
  std::sort(complete.begin(), complete.end());
  for (size_t i = 0; i + std::max(keep, 1) < complete.size(); ++i) {
    std::error_code ignored;
    fs::remove_all(complete[i].second, ignored);
  }
  return final_path.string();
}

StatusOr<std::optional<FoundCheckpoint>> NewestCheckpoint(
    const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return NotFound("--resume: '" + dir + "' is not a directory");
  }
  int64_t best = -1;
  fs::path best_path;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const int64_t step = StepOf(entry.path().filename().string());
    if (step > best && fs::exists(entry.path() / kStateFile, ec)) {
      best = step;
      best_path = entry.path();
    }
  }
  if (ec)
    return IoError("--resume: cannot read '" + dir + "': " + ec.message());
  if (best < 0) return std::optional<FoundCheckpoint>();
  PAREX_ASSIGN_OR_RETURN(std::string text,
                         ReadFileBytes((best_path / kStateFile).string()));
  PAREX_ASSIGN_OR_RETURN(CheckpointState state,
                         Parse(text, (best_path / kStateFile).string()));
  return std::optional<FoundCheckpoint>(
      FoundCheckpoint{best_path.string(), state});
}

StatusOr<FoundCheckpoint> Resume(const std::string& dir, const Program& main,
                                 const CheckpointState& want, Scope* scope,
                                 const std::vector<std::string>& skip) {
  PAREX_ASSIGN_OR_RETURN(std::optional<FoundCheckpoint> found,
                         NewestCheckpoint(dir));
  if (!found.has_value()) {
    return NotFound("--resume: no complete checkpoint in '" + dir + "'");
  }
  if (found->state.program != want.program) {
    return InvalidArgument("--resume: checkpoint '" + found->path +
                           "' was written by another program");
  }
  if (found->state.options != want.options) {
    return InvalidArgument("--resume: checkpoint '" + found->path +
                           "' was written with '" + found->state.options +
                           "', this run has '" + want.options + "'");
  }
  PAREX_RETURN_IF_ERROR(
      LoadPersistables(main, found->path, scope, skip).WithContext("--resume"));
  return *std::move(found);
}

Checkpointer::Checkpointer(CheckpointState run, std::string dir, int keep,
                           bool writer)
    : run_(std::move(run)),
      dir_(std::move(dir)),
      keep_(keep),
      writer_(writer) {}

Status Checkpointer::Resume(const std::string& cmd, const std::string& dir,
                            Cluster* cluster, const Program& main, Scope* scope,
                            const std::vector<std::string>& skip) {
  CheckpointState* where = &run_;
  const bool writer = writer_;
  if (writer) {
    PAREX_ASSIGN_OR_RETURN(FoundCheckpoint ckpt,
                           train::Resume(dir, main, *where, scope, skip));
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

StatusOr<std::string> Checkpointer::Write(
    int64_t step, int64_t epoch, int64_t next_batch, int64_t batches,
    const Program& main, const Scope& scope,
    const std::vector<std::string>& skip) const {
  if (!writes()) return std::string();
  CheckpointState state = run_;
  state.step = step;
  state.epoch = next_batch < batches ? epoch : epoch + 1;
  state.batch = next_batch < batches ? next_batch : 0;
  return WriteCheckpoint(dir_, main, scope, state, keep_, skip);
}

}  // namespace parex::train
