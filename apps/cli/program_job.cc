#include "apps/cli/program_job.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include "apps/cli/cli.h"
#include "apps/cli/npy.h"
#include "apps/cli/npz.h"
#include "apps/train/lr_schedule.h"
#include "base/digest.h"
#include "graph/builder/prune.h"
#include "graph/ir/op_role.h"
#include "graph/ir/validate.h"
#include "kernels/io/model_io.h"
#include "kernels/reference_executor.h"

namespace parex::cli {
namespace fs = std::filesystem;
using train::TrainJob;

namespace {

StatusOr<Program> LoadValidProgram(const std::string& path, const char* what) {
  PAREX_ASSIGN_OR_RETURN(Program program, Program::Load(path));
  if (Status s = ValidateProgram(program); !s.ok()) {
    return s.WithContext(std::string(what) + " '" + path + "'");
  }
  return program;
}

// Variables block 0 reads before any op of it writes them, that are not
// persistable: what a step must be fed.
std::set<std::string> NeededFeeds(const Block& block) {
  std::set<std::string> written, needed;
  for (const auto& op : block.ops()) {
    if (op->type() == "feed") {
      for (const std::string& out : op->OutputArgumentNames())
        written.insert(out);
      continue;
    }
    for (const std::string& in : op->InputArgumentNames()) {
      if (in.empty() || written.count(in) > 0) continue;
      const VarDesc* v = block.FindVar(in);
      if (v != nullptr && !v->persistable()) needed.insert(in);
    }
    for (const std::string& out : op->OutputArgumentNames())
      written.insert(out);
  }
  return needed;
}

Status Usage(bool* usage, Status s) {
  *usage = true;
  return s;
}

// Where a column of --data / --eval-data comes from: its name, its file (or
// the archive's path and array name), and its array when an archive held it
// (else read from the path).
struct Source {
  std::string name, path;
  std::optional<Tensor> loaded;
};

// The columns `specs` name (`option` names the option in errors): NAME=FILE
// as it is, a directory for its NAME.npy files, a FILE.npz for its arrays.
StatusOr<std::vector<Source>> ColumnSources(
    const std::vector<std::string>& specs, const std::string& option,
    bool* usage) {
  std::vector<Source> sources;
  for (const std::string& spec : specs) {
    std::error_code ec;
    const bool is_dir = fs::is_directory(spec, ec);
    if (spec.find('=') == std::string::npos && !is_dir &&
        fs::path(spec).extension() == ".npz") {
      StatusOr<NamedArrays> arrays = ReadNpz(spec);
      if (!arrays.ok())
        return Usage(usage, arrays.status().WithContext(option));
      for (auto& [name, t] : *arrays)
        sources.push_back({name, spec + ":" + name, std::move(t)});
      continue;
    }
    if (spec.find('=') != std::string::npos || !is_dir) {
      const size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
        return Usage(
            usage, InvalidArgument(option + " '" + spec +
                                   "': expected NAME=FILE.npy, a directory of "
                                   "NAME.npy files or a FILE.npz"));
      }
      sources.push_back(
          {spec.substr(0, eq), spec.substr(eq + 1), std::nullopt});
      continue;
    }
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(spec, ec)) {
      if (e.path().extension() == ".npy") files.push_back(e.path().string());
    }
    if (files.empty()) {
      return Usage(usage, NotFound(option + " '" + spec +
                                   "': the directory holds no *.npy"));
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      sources.push_back({fs::path(f).stem().string(), f, std::nullopt});
    }
  }
  return sources;
}

// The array of `source` (`what` names it in errors) checked against its
// variable `var` of the program: a dtype and shape past dim 0 that fit.
StatusOr<Tensor> ColumnArray(Source& source, const VarDesc& var,
                             const std::string& what, bool* usage) {
  const std::string& name = source.name;
  Tensor t;
  if (source.loaded) {
    t = std::move(*source.loaded);
  } else {
    PAREX_ASSIGN_OR_RETURN(t, ReadNpy(source.path));
  }
  if (t.rank() < 1) {
    return Usage(usage, InvalidArgument(what + ": a 0-d array has no rows"));
  }
  if (t.dtype() != var.dtype()) {
    return Usage(usage, InvalidArgument(what + ": the file holds " +
                                        DTypeName(t.dtype()) + ", '" + name +
                                        "' is " + DTypeName(var.dtype())));
  }
  const Dims& declared = var.dims();
  bool dims_ok = declared.size() == static_cast<size_t>(t.rank());
  for (size_t d = 1; dims_ok && d < declared.size(); ++d) {
    dims_ok = declared[d] < 0 || declared[d] == t.dim(static_cast<int>(d));
  }
  if (!dims_ok) {
    return Usage(usage, InvalidArgument(
                            what + ": rows of " + DimsToString(t.dims()) +
                            " do not fit '" + name + "' " +
                            DimsToString(declared) + " (dim 0 counts rows)"));
  }
  return t;
}

// NAME=FILE.npy columns for the variables of `block` (`option` names the
// option in errors): each a non-persistable variable of the program, of its
// dtype and shape past dim 0, all with the same rows. A directory stands for
// its NAME.npy files, a FILE.npz for its arrays.
StatusOr<std::vector<std::pair<std::string, Tensor>>> ReadColumns(
    const std::vector<std::string>& specs, const std::string& option,
    const Block& block, const std::string& main_path, bool* usage) {
  PAREX_ASSIGN_OR_RETURN(std::vector<Source> sources,
                         ColumnSources(specs, option, usage));
  std::vector<std::pair<std::string, Tensor>> columns;
  std::set<std::string> fed;
  int64_t rows = -1;
  std::string first;
  for (Source& source : sources) {
    const std::string& name = source.name;
    const std::string what = option + " " + name + "=" + source.path;
    const VarDesc* var = block.FindVar(name);
    if (var == nullptr) {
      return Usage(usage, NotFound(what + ": the program '" + main_path +
                                   "' has no variable '" + name + "'"));
    }
    if (var->persistable()) {
      return Usage(
          usage, InvalidArgument(what + ": '" + name +
                                 "' is persistable (a parameter), not a feed"));
    }
    if (!fed.insert(name).second) {
      return Usage(usage,
                   InvalidArgument(option + " names '" + name + "' twice"));
    }
    PAREX_ASSIGN_OR_RETURN(Tensor t, ColumnArray(source, *var, what, usage));
    if (rows >= 0 && t.dim(0) != rows) {
      return Usage(
          usage, InvalidArgument(option + ": '" + name + "' has " +
                                 std::to_string(t.dim(0)) + " rows, '" + first +
                                 "' has " + std::to_string(rows)));
    }
    if (rows < 0) {
      rows = t.dim(0);
      first = name;
    }
    columns.emplace_back(name, std::move(t));
  }
  return columns;
}

// The programs' paths: --program a file, or a directory holding
// main.pdmodel (or one *.pdmodel) and, unless --startup names one,
// startup.pdmodel.
struct ProgramPaths {
  std::string main, startup;
};
StatusOr<ProgramPaths> FindPrograms(const TrainOptions& o, bool* usage) {
  std::error_code ec;
  ProgramPaths paths{o.program, o.startup};
  if (fs::is_directory(o.program, ec)) {
    const fs::path dir(o.program);
    if (fs::exists(dir / "main.pdmodel", ec)) {
      paths.main = (dir / "main.pdmodel").string();
    } else {
      PAREX_ASSIGN_OR_RETURN(paths.main, OnlyPdmodel(o.program));
    }
    if (paths.startup.empty() && fs::exists(dir / "startup.pdmodel", ec)) {
      paths.startup = (dir / "startup.pdmodel").string();
    }
  } else if (!fs::exists(o.program, ec)) {
    return Usage(usage,
                 NotFound("--program: '" + o.program + "' does not exist"));
  }
  if (paths.startup.empty() && o.params.empty()) {
    return Usage(
        usage, InvalidArgument(
                   "--program '" + o.program +
                   "': its persistables need --startup PROGRAM or --params DIR "
                   "(or a startup.pdmodel beside main.pdmodel)"));
  }
  return paths;
}

// The loss: --loss, else the one Fluid marked.
StatusOr<std::string> FindLoss(const std::string& loss, const Block& block,
                               const std::string& main_path, bool* usage) {
  if (!loss.empty()) {
    if (block.FindVar(loss) == nullptr) {
      return Usage(usage, NotFound("--loss: the program '" + main_path +
                                   "' has no variable '" + loss + "'"));
    }
    return loss;
  }
  const std::vector<std::string> marked = MarkedLosses(block);
  if (marked.size() != 1) {
    std::string names;
    for (const std::string& m : marked)
      names += (names.empty() ? "" : ", ") + m;
    return Usage(
        usage, InvalidArgument("the program '" + main_path + "' " +
                               (marked.empty()
                                    ? std::string("marks no op as its loss")
                                    : "marks several losses (" + names + ")") +
                               "; name the loss with --loss"));
  }
  return marked[0];
}

// A training program's accuracy (the first accuracy op's output) and its
// trainable parameters (what the optimizer ops update), into `job`.
Status FindTrainedParams(const Block& block, const std::string& main_path,
                         TrainJob* job, bool* usage) {
  if (!HasBackwardOps(block)) {
    return Usage(usage,
                 InvalidArgument("the program '" + main_path +
                                 "' has no backward ops: it is not a training "
                                 "program (minimize() adds them)"));
  }
  std::set<std::string> params;
  for (const auto& op : block.ops()) {
    if (op->type() == "accuracy" && job->accuracy.empty()) {
      job->accuracy = op->FirstOutput("Accuracy");
    }
    if ((OpRole(*op) & kOpRoleOptimize) != 0 &&
        !op->FirstInput("Param").empty()) {
      params.insert(op->FirstInput("Param"));
    }
  }
  job->params.assign(params.begin(), params.end());
  return Status::Ok();
}

// --lr-schedule sets the optimizers' LearningRate variables, which must be
// plain persistables: a program that computes its rate (an in-graph
// schedule) runs as it is.
// The optimizers' LearningRate variables, and every variable an op writes.
void FindLrVars(const Block& block, std::set<std::string>* lr_vars,
                std::set<std::string>* written) {
  for (const auto& op : block.ops()) {
    for (const std::string& out : op->OutputArgumentNames())
      written->insert(out);
    if ((OpRole(*op) & kOpRoleOptimize) != 0 &&
        !op->FirstInput("LearningRate").empty()) {
      lr_vars->insert(op->FirstInput("LearningRate"));
    }
  }
}

// Without --lr-schedule: the persistable learning rates nothing writes.
void FindFixedLrVars(const Block& block, TrainJob* job) {
  std::set<std::string> lr_vars, written;
  FindLrVars(block, &lr_vars, &written);
  for (const std::string& v : lr_vars) {
    const VarDesc* var = block.FindVar(v);
    if (var != nullptr && var->persistable() && written.count(v) == 0) {
      job->fixed_lr_vars.push_back(v);
    }
  }
}

Status SetLrSchedule(const std::string& spec, const Block& block,
                     const std::string& main_path, TrainJob* job, bool* usage) {
  StatusOr<train::LrSchedule> schedule = train::ParseLrSchedule(spec);
  if (!schedule.ok()) return Usage(usage, schedule.status());
  std::set<std::string> lr_vars, written;
  FindLrVars(block, &lr_vars, &written);
  if (lr_vars.empty()) {
    return Usage(usage,
                 InvalidArgument("--lr-schedule: the program '" + main_path +
                                 "' has no optimizer op with a LearningRate"));
  }
  for (const std::string& v : lr_vars) {
    const VarDesc* var = block.FindVar(v);
    if (var == nullptr || !var->persistable() || written.count(v) > 0) {
      return Usage(usage,
                   InvalidArgument(
                       "--lr-schedule: the program '" + main_path +
                       "' computes its learning rate '" + v +
                       "' itself (an in-graph schedule); run it without one"));
    }
  }
  job->lr_vars.assign(lr_vars.begin(), lr_vars.end());
  job->lr_at = *schedule;
  return Status::Ok();
}

// The data: NAME=FILE.npy per fed variable (--data), the variables reported
// each step (--fetch) and the evaluation set with its pruned program
// (--eval-data), into `job`.
Status ReadData(const TrainOptions& o, const Block& block,
                const std::string& main_path, TrainJob* job, bool* usage) {
  PAREX_ASSIGN_OR_RETURN(
      job->columns, ReadColumns(o.data, "--data", block, main_path, usage));
  std::set<std::string> fed;
  for (const auto& [name, t] : job->columns) fed.insert(name);
  for (const std::string& need : NeededFeeds(block)) {
    if (fed.count(need) == 0) {
      return Usage(
          usage,
          InvalidArgument("the program '" + main_path + "' reads '" + need +
                          "', which no --data " + need + "=FILE.npy feeds"));
    }
  }
  if (job->columns.empty()) {
    return Usage(
        usage, InvalidArgument("--program needs its data: --data NAME=FILE.npy "
                               "for each variable it reads"));
  }
  for (const std::string& f : o.fetch) {
    if (block.FindVar(f) == nullptr) {
      return Usage(usage, NotFound("--fetch: the program '" + main_path +
                                   "' has no variable '" + f + "'"));
    }
    job->fetches.push_back(f);
  }
  if (o.eval_data.empty()) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(
      job->eval_columns,
      ReadColumns(o.eval_data, "--eval-data", block, main_path, usage));
  std::vector<std::string> eval_feeds, eval_fetches = {job->loss};
  for (const auto& [name, t] : job->eval_columns) eval_feeds.push_back(name);
  if (!job->accuracy.empty()) eval_fetches.push_back(job->accuracy);
  StatusOr<Program> pruned = Prune(job->main, eval_feeds, eval_fetches);
  if (!pruned.ok()) {
    return Usage(usage, pruned.status().WithContext(
                            "--eval-data (the evaluation program)"));
  }
  job->eval_program = std::move(*pruned);
  return Status::Ok();
}

// How a program's persistables start (--startup, then --params) and what
// the writer saves at the end: every persistable, in Paddle's tensor files.
void SetStartAndFinish(const std::string& startup_path,
                       const std::string& params_dir, TrainJob* job) {
  auto main = std::make_shared<Program>(job->main);
  auto startup = std::make_shared<Program>(job->startup);
  const bool has_startup = !startup_path.empty();
  job->init = [main, startup, has_startup, params_dir](
                  Scope* scope,
                  const std::vector<std::string>& skip) -> Status {
    if (has_startup) {
      ReferenceExecutor executor;
      PAREX_RETURN_IF_ERROR(
          executor.Run(WithoutOpsMakingOnly(*startup, skip), scope, {}, {})
              .status()
              .WithContext("--startup"));
    }
    if (!params_dir.empty()) {
      PAREX_RETURN_IF_ERROR(LoadPersistables(*main, params_dir, scope, skip)
                                .WithContext("--params"));
    }
    return Status::Ok();
  };
  job->finish = [main](
                    Scope* scope, bool writer,
                    const std::string& save) -> StatusOr<TrainJob::Finished> {
    TrainJob::Finished f;
    if (writer) {
      std::error_code ec;
      fs::create_directories(save, ec);
      if (ec)
        return IoError("--save: cannot create '" + save + "': " + ec.message());
      PAREX_RETURN_IF_ERROR(
          SavePersistables(*main, save, *scope).WithContext("--save"));
      f.saved = "saved           " +
                std::to_string(PersistableTensorNames(*main).size()) +
                " persistables to " + save +
                " (Paddle's tensor files, one per var)\n";
    }
    return f;
  };
}

}  // namespace

StatusOr<TrainJob> ProgramJob(const TrainOptions& o, bool* usage) {
  PAREX_ASSIGN_OR_RETURN(ProgramPaths paths, FindPrograms(o, usage));
  TrainJob job;
  PAREX_ASSIGN_OR_RETURN(job.main, LoadValidProgram(paths.main, "--program"));
  if (!paths.startup.empty()) {
    PAREX_ASSIGN_OR_RETURN(job.startup,
                           LoadValidProgram(paths.startup, "--startup"));
  }
  std::error_code ec;
  if (!o.params.empty() && !fs::is_directory(o.params, ec)) {
    return Usage(usage,
                 NotFound("--params: '" + o.params + "' is not a directory"));
  }
  const Block& block = job.main.global_block();
  job.title = "program '" + paths.main + "'";
  PAREX_ASSIGN_OR_RETURN(job.loss, FindLoss(o.loss, block, paths.main, usage));
  PAREX_RETURN_IF_ERROR(FindTrainedParams(block, paths.main, &job, usage));
  if (!o.lr_schedule.empty()) {
    PAREX_RETURN_IF_ERROR(
        SetLrSchedule(o.lr_schedule, block, paths.main, &job, usage));
  } else {
    FindFixedLrVars(block, &job);
  }
  PAREX_RETURN_IF_ERROR(ReadData(o, block, paths.main, &job, usage));
  job.default_epochs = 1;
  job.default_batch = 32;
  job.default_save = "parex-" + fs::path(paths.main).stem().string();
  job.identity =
      "--loss " + job.loss + " --lr-schedule '" + o.lr_schedule + "' --data";
  for (const auto& [name, t] : job.columns) {
    job.identity += " " + name + ":" + std::to_string(t.dim(0)) + ":" +
                    Sha256Hex(std::string(
                        static_cast<const char*>(t.raw_data()), t.bytes()));
  }
  SetStartAndFinish(paths.startup, o.params, &job);
  return job;
}

}  // namespace parex::cli
