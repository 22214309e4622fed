// A pserver's part of a checkpoint (pserver_run.h): DIR/ckpt-<step>.<node>
// holds each persistable the pserver holds in Paddle's tensor format (its
// row block, for a parameter split in blocks) and `parex_shard`, a line
// per variable: "var NAME BEGIN END ROWS" (0 0 0: held whole), checked
// against the placement when it is read back.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <vector>

#include "apps/train/pserver_run.h"
#include "base/file_io.h"
#include "kernels/io/tensor_io.h"

namespace parex::train {
namespace fs = std::filesystem;
namespace {

constexpr char kShardFile[] = "parex_shard";

std::string ShardName(int64_t step, const std::string& node) {
  return "ckpt-" + std::to_string(step) + "." + node;
}

struct ShardLine {
  int64_t begin = 0, end = 0, rows = 0;
};

StatusOr<std::map<std::string, ShardLine>> ParseShard(const std::string& text,
                                                      const std::string& path) {
  std::map<std::string, ShardLine> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, name;
    ShardLine s;
    if (!(fields >> key) || key != "var") continue;
    if (!(fields >> name >> s.begin >> s.end >> s.rows) || s.begin < 0 ||
        s.end < s.begin || s.rows < s.end) {
      return InvalidArgument("checkpoint part '" + path + "': bad line '" +
                             line + "'");
    }
    lines[name] = s;
  }
  return lines;
}

}  // namespace

StatusOr<std::string> PserverRun::WriteShard(const std::string& dir,
                                             int64_t step, int keep,
                                             const Scope& scope) const {
  if (!pserver_) return std::string();
  const std::string what = "pserver '" + node_ + "': checkpoint part";
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path final_path = fs::path(dir) / ShardName(step, node_);
  const fs::path tmp = fs::path(dir) / (".tmp-" + ShardName(step, node_));
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) {
    return IoError(what + ": cannot create '" + tmp.string() +
                   "': " + ec.message());
  }
  std::string index;
  for (const auto& [name, held] : held_) {
    const auto rows = RowsHere(held);
    if (!rows.has_value()) continue;
    const Variable* var = scope.FindVar(name);
    const Tensor* t = var != nullptr ? var->GetTensor() : nullptr;
    if (t == nullptr || !t->defined()) {
      return FailedPrecondition(what + ": '" + name + "' holds no tensor");
    }
    PAREX_RETURN_IF_ERROR(SaveTensorFile((tmp / name).string(), *t));
    index += "var " + name + " " + std::to_string(rows->first) + " " +
             std::to_string(rows->second) + " " + std::to_string(held.rows) +
             "\n";
  }
  // The index last: with it the part is complete.
  PAREX_RETURN_IF_ERROR(WriteFileBytes((tmp / kShardFile).string(), index));
  fs::remove_all(final_path, ec);
  fs::rename(tmp, final_path, ec);
  if (ec) {
    return IoError(what + ": cannot rename '" + tmp.string() + "' to '" +
                   final_path.string() + "': " + ec.message());
  }
  PruneShards(dir, keep);
  return final_path.string();
}

void PserverRun::PruneShards(const std::string& dir, int keep) const {
  std::error_code ec;
  // This node's newest keep + 1 parts stay.
  const std::string prefix = "ckpt-", suffix = "." + node_;
  std::vector<std::pair<int64_t, fs::path>> parts;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string n = entry.path().filename().string();
    const bool interrupted = n.rfind(".tmp-", 0) == 0;
    if (interrupted) n = n.substr(5);
    if (n.size() <= prefix.size() + suffix.size() || n.rfind(prefix, 0) != 0 ||
        n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string digits =
        n.substr(prefix.size(), n.size() - prefix.size() - suffix.size());
    if (digits.empty() || digits.size() > 18 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    if (interrupted) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);  // this node's, left by a kill
      continue;
    }
    parts.emplace_back(std::stoll(digits), entry.path());
  }
  std::sort(parts.begin(), parts.end());
  for (size_t i = 0; i + std::max(keep, 1) + 1 < parts.size(); ++i) {
    std::error_code ignored;
    fs::remove_all(parts[i].second, ignored);
  }
}

Status PserverRun::LoadShard(const std::string& dir, int64_t step,
                             Scope* scope) const {
  if (!pserver_) return Status::Ok();
  const fs::path path = fs::path(dir) / ShardName(step, node_);
  const std::string what = "pserver '" + node_ +
                           "': --resume: checkpoint part '" + path.string() +
                           "'";
  StatusOr<std::string> text = ReadFileBytes((path / kShardFile).string());
  if (!text.ok()) {
    return NotFound(what +
                    " is missing or incomplete (each pserver reads the "
                    "part of step " +
                    std::to_string(step) +
                    " that it wrote): " + text.status().message());
  }
  PAREX_ASSIGN_OR_RETURN(auto lines, ParseShard(*text, path.string()));
  for (const auto& [name, held] : held_) {
    const auto rows = RowsHere(held);
    if (!rows.has_value()) continue;
    const auto line = lines.find(name);
    if (line == lines.end() || line->second.begin != rows->first ||
        line->second.end != rows->second || line->second.rows != held.rows) {
      return InvalidArgument(what + ": holds no rows [" +
                             std::to_string(rows->first) + ", " +
                             std::to_string(rows->second) + ") of '" + name +
                             "' (written for another placement)");
    }
    Tensor part;
    PAREX_RETURN_IF_ERROR(
        LoadTensorFile((path / name).string(), &part).WithContext(what));
    Variable* var = scope->FindVar(name);
    Tensor* whole = var != nullptr ? var->GetMutableTensor() : nullptr;
    if (whole == nullptr || !whole->defined()) {
      return FailedPrecondition(what + ": '" + name +
                                "' was not made by the startup program");
    }
    Tensor target =
        held.rows == 0 ? *whole : whole->Slice(rows->first, rows->second);
    if (part.dims() != target.dims() || part.dtype() != target.dtype()) {
      return InvalidArgument(what + ": '" + name + "' is " +
                             DimsToString(part.dims()) + ", not " +
                             DimsToString(target.dims()));
    }
    if (part.bytes() > 0) {
      std::memcpy(target.raw_data(), part.raw_data(), part.bytes());
    }
  }
  return Status::Ok();
}

}  // namespace parex::train
