#include "kernels/io/model_io.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "graph/builder/prune.h"
#include "graph/ir/validate.h"
#include "kernels/io/tensor_io.h"
#include "proto/program_io.h"

namespace parex {
namespace {

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The loaded tensor must match its declaration (-1 extents match anything).
Status CheckAgainstDecl(const VarDesc& var, const Tensor& t,
                        const std::string& source) {
  if (var.dtype() != DType::kUndefined && var.dtype() != t.dtype()) {
    return InvalidArgument(source + ": variable '" + var.name() +
                           "' is declared " + DTypeName(var.dtype()) +
                           " but the file holds " + DTypeName(t.dtype()));
  }
  Dims decl = var.dims();
  bool ok = decl.empty() || decl.size() == t.dims().size();
  for (size_t i = 0; ok && !decl.empty() && i < decl.size(); ++i) {
    ok = ExtentsAgree(decl[i], t.dims()[i]);
  }
  if (!ok) {
    return InvalidArgument(source + ": variable '" + var.name() +
                           "' is declared " + DimsToString(decl) +
                           " but the file holds " + DimsToString(t.dims()));
  }
  return Status::Ok();
}

void Install(std::map<std::string, Tensor>& loaded, Scope* scope) {
  for (auto& [name, tensor] : loaded) {
    *scope->Var(name)->GetMutableTensor() = std::move(tensor);
  }
}

StatusOr<const Tensor*> ScopeTensor(const Scope& scope,
                                    const std::string& name) {
  const Variable* v = scope.FindVar(name);
  if (v == nullptr || v->GetTensor() == nullptr || !v->GetTensor()->defined()) {
    return NotFound("persistable variable '" + name +
                    "' has no value in the scope to save");
  }
  if (!v->GetTensor()->place().is_cpu()) {
    return Unimplemented("saving '" + name + "' from " +
                         v->GetTensor()->place().ToString());
  }
  return v->GetTensor();
}

Status MakeDirectories(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return IoError("cannot create directory '" + dir + "': " + error.message());
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> PersistableTensorNames(const Program& program) {
  std::vector<std::string> names;
  for (const auto& var : program.global_block().vars()) {
    if (!var->persistable()) continue;
    if (var->type() == proto::VarType::FEED_MINIBATCH ||
        var->type() == proto::VarType::FETCH_LIST ||
        var->type() == proto::VarType::RAW) {
      continue;
    }
    names.push_back(var->name());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Status LoadPersistables(const Program& program, const std::string& dir,
                        Scope* scope, const std::vector<std::string>& skip) {
  std::map<std::string, Tensor> loaded;
  for (const std::string& name : PersistableTensorNames(program)) {
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    std::string path = dir + "/" + name;
    Tensor t;
    Status s = LoadTensorFile(path, &t);
    if (!s.ok()) {
      return s.WithContext("loading parameter '" + name + "'");
    }
    PAREX_RETURN_IF_ERROR(CheckAgainstDecl(
        *program.global_block().FindLocalVar(name), t, "file '" + path + "'"));
    loaded.emplace(name, std::move(t));
  }
  Install(loaded, scope);
  return Status::Ok();
}

Status SavePersistables(const Program& program, const std::string& dir,
                        const Scope& scope,
                        const std::vector<std::string>& skip) {
  // Check every value first, so a failed save writes nothing.
  std::vector<std::pair<std::string, const Tensor*>> values;
  for (const std::string& name : PersistableTensorNames(program)) {
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    PAREX_ASSIGN_OR_RETURN(const Tensor* t, ScopeTensor(scope, name));
    values.emplace_back(name, t);
  }
  for (const auto& [name, t] : values) {
    PAREX_RETURN_IF_ERROR(SaveTensorFile(dir + "/" + name, *t));
  }
  return Status::Ok();
}

Status LoadCombinedPersistables(const Program& program, const std::string& path,
                                Scope* scope) {
  PAREX_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  std::istringstream in(bytes);
  std::map<std::string, Tensor> loaded;
  for (const std::string& name : PersistableTensorNames(program)) {
    std::string source =
        "parameter file '" + path + "', variable '" + name + "'";
    Tensor t;
    PAREX_RETURN_IF_ERROR(ReadTensor(in, source, &t));
    PAREX_RETURN_IF_ERROR(CheckAgainstDecl(
        *program.global_block().FindLocalVar(name), t, source));
    loaded.emplace(name, std::move(t));
  }
  if (static_cast<size_t>(in.tellg()) != bytes.size()) {
    return DataLoss("parameter file '" + path +
                    "': " + std::to_string(bytes.size() - in.tellg()) +
                    " bytes left after the program's " +
                    std::to_string(loaded.size()) + " persistable variables");
  }
  Install(loaded, scope);
  return Status::Ok();
}

Status SaveCombinedPersistables(const Program& program, const std::string& path,
                                const Scope& scope) {
  std::ostringstream out;
  for (const std::string& name : PersistableTensorNames(program)) {
    PAREX_ASSIGN_OR_RETURN(const Tensor* t, ScopeTensor(scope, name));
    PAREX_RETURN_IF_ERROR(WriteTensor(out, *t));
  }
  return WriteFileBytes(path, out.str());
}

Status FeedFetchTargets(const Program& program, std::vector<std::string>* feeds,
                        std::vector<std::string>* fetches) {
  feeds->clear();
  fetches->clear();
  for (const auto& op : program.global_block().ops()) {
    bool is_feed = op->type() == "feed";
    if (!is_feed && op->type() != "fetch") continue;
    PAREX_ASSIGN_OR_RETURN(int col, op->GetAttr<int>("col"));
    auto& list = is_feed ? *feeds : *fetches;
    if (col < 0 || col > 4096) {
      return InvalidArgument(op->Label() + ": bad column " +
                             std::to_string(col));
    }
    if (static_cast<int>(list.size()) <= col) list.resize(col + 1);
    if (!list[col].empty()) {
      return InvalidArgument(op->Label() + ": a second " + op->type() +
                             " op for column " + std::to_string(col));
    }
    list[col] = is_feed ? op->FirstOutput("Out") : op->FirstInput("X");
    if (list[col].empty()) {
      return InvalidArgument(op->Label() + ": names no variable");
    }
  }
  for (const auto* list : {feeds, fetches}) {
    for (size_t col = 0; col < list->size(); ++col) {
      if ((*list)[col].empty()) {
        return InvalidArgument(
            std::string(list == feeds ? "feed" : "fetch") + " column " +
            std::to_string(col) +
            " has no op (columns must be 0, 1, ... without gaps)");
      }
    }
  }
  return Status::Ok();
}

StatusOr<InferenceModel> LoadInferenceModel(const std::string& dir,
                                            Scope* scope) {
  std::string model = dir + "/__model__";
  std::string params = dir + "/__params__";
  if (FileExists(params)) return LoadInferenceModel(model, params, scope);
  PAREX_ASSIGN_OR_RETURN(Program program, Program::Load(model));
  Status valid = ValidateProgram(program);
  if (!valid.ok()) return valid.WithContext("program '" + model + "'");
  InferenceModel result{std::move(program), {}, {}};
  Status targets =
      FeedFetchTargets(result.program, &result.feed_names, &result.fetch_names);
  if (!targets.ok()) return targets.WithContext("program '" + model + "'");
  PAREX_RETURN_IF_ERROR(LoadPersistables(result.program, dir, scope));
  return result;
}

StatusOr<InferenceModel> LoadInferenceModel(const std::string& model_path,
                                            const std::string& params_path,
                                            Scope* scope) {
  PAREX_ASSIGN_OR_RETURN(Program program, Program::Load(model_path));
  Status valid = ValidateProgram(program);
  if (!valid.ok()) return valid.WithContext("program '" + model_path + "'");
  InferenceModel result{std::move(program), {}, {}};
  Status targets =
      FeedFetchTargets(result.program, &result.feed_names, &result.fetch_names);
  if (!targets.ok()) return targets.WithContext("program '" + model_path + "'");
  PAREX_RETURN_IF_ERROR(
      LoadCombinedPersistables(result.program, params_path, scope));
  return result;
}

Status SaveInferenceModel(const std::string& dir,
                          const std::vector<std::string>& feeds,
                          const std::vector<std::string>& fetches,
                          const Program& main, const Scope& scope,
                          Program* pruned) {
  PAREX_ASSIGN_OR_RETURN(Program program, Prune(main, feeds, fetches));
  PAREX_RETURN_IF_ERROR(MakeDirectories(dir));
  // Parameters first: a directory with a __model__ is a complete model.
  PAREX_RETURN_IF_ERROR(SavePersistables(program, dir, scope));
  PAREX_RETURN_IF_ERROR(program.Save(dir + "/__model__"));
  if (pruned != nullptr) *pruned = std::move(program);
  return Status::Ok();
}

Status SaveCheckpoint(const Program& main, const std::string& dir,
                      const Scope& scope) {
  PAREX_RETURN_IF_ERROR(MakeDirectories(dir));
  Status saved = SavePersistables(main, dir, scope);
  if (!saved.ok()) return saved.WithContext("checkpoint '" + dir + "'");
  return Status::Ok();
}

Status LoadCheckpoint(const Program& main, const std::string& dir,
                      Scope* scope) {
  Status loaded = LoadPersistables(main, dir, scope);
  if (!loaded.ok()) return loaded.WithContext("checkpoint '" + dir + "'");
  return Status::Ok();
}

}  // namespace parex
