#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "actors/executor/parallel_executor.h"
#include "apps/cli/cli.h"
#include "graph/ir/validate.h"
#include "kernels/visible_devices.h"

namespace parex::cli {
namespace fs = std::filesystem;

StatusOr<std::vector<Place>> ParsePlaces(const std::string& spec,
                                         const std::string& what) {
  StatusOr<std::vector<Place>> places = ParseMachinePlaceList(spec);
  if (places.ok()) return places;
  if (places.status().code() == StatusCode::kInvalidArgument)
    return InvalidArgument("bad " + what + " " + places.status().message());
  return Status(places.status().code(), what + " " + places.status().message());
}

StatusOr<std::vector<Place>> RunnablePlaces(const std::string& spec,
                                            const std::string& what) {
  PAREX_ASSIGN_OR_RETURN(std::vector<Place> places, ParsePlaces(spec, what));
  Status runnable = ParallelExecutor::CheckPlaces(places);
  if (!runnable.ok()) return runnable.WithContext(what + " '" + spec + "'");
  return places;
}

int PlacesExitCode(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument ? kExitUsage
                                                       : kExitRuntime;
}

StatusOr<Parallelism> ParseParallelism(const std::string& places,
                                       const std::string& mode, bool to_run,
                                       const std::string& what) {
  Parallelism p;
  PAREX_ASSIGN_OR_RETURN(p.places, to_run ? RunnablePlaces(places, what)
                                          : ParsePlaces(places, what));
  if (mode == "reduce") {
    p.build.reduce = BuildStrategy::ReduceStrategy::kReduce;
  } else if (mode != "allreduce") {
    return InvalidArgument("--mode must be allreduce or reduce, not '" + mode +
                           "'");
  }
  return p;
}

StatusOr<std::string> OnlyPdmodel(const std::string& dir) {
  std::string found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".pdmodel") continue;
    if (!found.empty()) {
      return InvalidArgument("'" + dir +
                             "' holds several *.pdmodel files; name one");
    }
    found = entry.path().string();
  }
  if (found.empty()) {
    return NotFound("'" + dir + "' holds no __model__ and no *.pdmodel file");
  }
  return found;
}

namespace {

StatusOr<InferenceModel> ProgramOnly(const std::string& file, bool validate) {
  PAREX_ASSIGN_OR_RETURN(Program program, Program::Load(file));
  if (validate) {
    Status valid = ValidateProgram(program);
    if (!valid.ok()) return valid.WithContext("program '" + file + "'");
  }
  InferenceModel model;
  model.program = std::move(program);
  // A program without feed/fetch ops (a training program) has no targets.
  Status targets =
      FeedFetchTargets(model.program, &model.feed_names, &model.fetch_names);
  if (!targets.ok() && validate)
    return targets.WithContext("program '" + file + "'");
  return model;
}

}  // namespace

StatusOr<InferenceModel> LoadModel(const std::string& path,
                                   const std::string& params, Scope* scope,
                                   bool validate) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return NotFound("'" + path + "' does not exist");
  if (!params.empty() && !fs::exists(params, ec)) {
    return NotFound("parameter file '" + params + "' does not exist");
  }
  std::string file = path;
  std::string params_file = params;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(fs::path(path) / "__model__", ec)) {
      if (scope == nullptr) {
        return ProgramOnly((fs::path(path) / "__model__").string(), validate);
      }
      return LoadInferenceModel(path, scope);
    }
    PAREX_ASSIGN_OR_RETURN(file, OnlyPdmodel(path));
  }
  if (params_file.empty()) {
    fs::path beside = fs::path(file).replace_extension(".pdiparams");
    if (fs::exists(beside, ec)) params_file = beside.string();
  } else if (!fs::exists(params_file, ec)) {
    return NotFound("parameter file '" + params_file + "' does not exist");
  }
  if (scope == nullptr || params_file.empty())
    return ProgramOnly(file, validate);
  return LoadInferenceModel(file, params_file, scope);
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

}  // namespace parex::cli
