#include "apps/cli/train_job.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "apps/cli/lr_schedule.h"
#include "apps/cli/npy.h"
#include "apps/cli/npz.h"
#include "apps/models.h"
#include "apps/reader.h"
#include "base/digest.h"
#include "graph/builder/prune.h"
#include "graph/ir/op_role.h"
#include "graph/ir/validate.h"
#include "kernels/io/model_io.h"
#include "kernels/reference_executor.h"

namespace parex::cli {
namespace fs = std::filesystem;

namespace {

struct Defaults {
  int epochs;
  int64_t batch;
};

Defaults DefaultsOf(ExampleKind kind) {
  switch (kind) {
    case ExampleKind::kFitALine:
      return {100, 20};
    case ExampleKind::kDigitsMlp:
      return {20, 32};
    case ExampleKind::kFashionMlp:
      return {5, 64};
    case ExampleKind::kFashionCnn:
      return {1, 64};
  }
  return {1, 32};
}

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

// NAME=FILE.npy columns for the variables of `block` (`option` names the
// option in errors): each a non-persistable variable of the program, of its
// dtype and shape past dim 0, all with the same rows. A directory stands for
// its NAME.npy files, a FILE.npz for its arrays.
StatusOr<std::vector<std::pair<std::string, Tensor>>> ReadColumns(
    const std::vector<std::string>& specs, const std::string& option,
    const Block& block, const std::string& main_path, bool* usage) {
  std::vector<std::pair<std::string, Tensor>> columns;
  std::set<std::string> fed;
  int64_t rows = -1;
  std::string first;
  // Each column: its name, where it comes from, and its array when an
  // archive held it (else read from the path).
  struct Source {
    std::string name, path;
    std::optional<Tensor> loaded;
  };
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
    Tensor t;
    if (source.loaded) {
      t = std::move(*source.loaded);
    } else {
      PAREX_ASSIGN_OR_RETURN(t, ReadNpy(source.path));
    }
    if (t.rank() < 1) {
      return Usage(usage, InvalidArgument(what + ": a 0-d array has no rows"));
    }
    if (t.dtype() != var->dtype()) {
      return Usage(usage, InvalidArgument(what + ": the file holds " +
                                          DTypeName(t.dtype()) + ", '" + name +
                                          "' is " + DTypeName(var->dtype())));
    }
    const Dims& declared = var->dims();
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

}  // namespace

StatusOr<EvalResult> EvaluateJob(const TrainJob& job, ParallelExecutor* eval,
                                 int places, int64_t batch) {
  const int n = places;
  const bool classifier = !job.accuracy.empty();
  std::vector<std::string> targets = {job.loss};
  if (classifier) targets.push_back(job.accuracy);
  PAREX_ASSIGN_OR_RETURN(
      BatchReader reader,
      BatchReader::Create(job.eval_columns, {batch, false, 0, false}));
  EvalResult result;
  BatchReader::Iterator it = reader.Begin(0);
  FeedMap feed;
  while (it.Next(&feed)) {
    const int64_t r = feed.at(job.eval_columns[0].first).dim(0);
    if (r < n) continue;  // too few rows to split over the places
    PAREX_ASSIGN_OR_RETURN(std::vector<Tensor> out, eval->Run(feed, targets));
    if (out[0].numel() != n)
      return Internal("the loss is not one value per place");
    for (int p = 0; p < n; ++p) {
      const int64_t share = p == n - 1 ? r - (r / n) * (n - 1) : r / n;
      const auto at = [&](const Tensor& t) {
        return t.dtype() == DType::kFP64 ? t.data<double>()[p]
                                         : t.data<float>()[p];
      };
      result.loss += at(out[0]) * share;
      if (classifier) result.accuracy += at(out[1]) * share;
    }
    result.rows += r;
  }
  if (result.rows == 0)
    return InvalidArgument("no evaluation rows (fewer than the places)");
  result.loss /= result.rows;
  result.accuracy /= result.rows;
  return result;
}

StatusOr<TrainJob> ExampleJob(const TrainOptions& o, bool* usage) {
  StatusOr<ExampleKind> kind = ParseExampleKind(o.model);
  if (!kind.ok()) return Usage(usage, kind.status());
  ExampleOptions options;
  options.random_seed = o.seed;
  options.learning_rate = o.lr.value_or(0);  // 0: the example's own
  PAREX_ASSIGN_OR_RETURN(ExampleProgram built, BuildExample(*kind, options));
  auto model = std::make_shared<ExampleProgram>(std::move(built));
  PAREX_ASSIGN_OR_RETURN(ExampleData loaded,
                         LoadExampleData(*kind, o.data_dir, o.fashion_dir));
  auto data = std::make_shared<ExampleData>(std::move(loaded));
  TrainJob job;
  job.title = ExampleName(*kind);
  job.main = model->main;
  job.startup = model->startup;
  job.loss = model->loss;
  job.accuracy = model->accuracy;
  for (const ParamGrad& pg : model->params) job.params.push_back(pg.param);
  std::sort(job.params.begin(), job.params.end());
  job.columns = {{model->input, data->train_x}, {model->label, data->train_y}};
  const Defaults defaults = DefaultsOf(*kind);
  job.default_epochs = defaults.epochs;
  job.default_batch = defaults.batch;
  job.default_save = "parex-" + o.model;
  job.identity = "--model " + o.model;
  auto trainer = std::make_shared<std::unique_ptr<Trainer>>();
  job.init = [model, trainer](Scope* scope) {
    *trainer = std::make_unique<Trainer>(model.get(), scope);
    return (*trainer)->RunStartup();
  };
  job.finish = [model, data, trainer](
                   Scope*, bool writer,
                   const std::string& save) -> StatusOr<TrainJob::Finished> {
    PAREX_ASSIGN_OR_RETURN(Evaluation eval,
                           (*trainer)->Evaluate(data->test_x, data->test_y));
    TrainJob::Finished f;
    char line[160];
    if (model->is_classifier()) {
      std::snprintf(line, sizeof(line), "test accuracy   %.4f on %lld rows\n",
                    eval.accuracy, static_cast<long long>(eval.rows));
    } else {
      std::snprintf(line, sizeof(line), "test MSE        %.4f on %lld rows\n",
                    eval.mse, static_cast<long long>(eval.rows));
    }
    f.report = line;
    if (writer) {
      PAREX_RETURN_IF_ERROR((*trainer)->SaveInferenceModel(save));
      f.saved = "model saved to  " + save +
                " (inference model: " + model->input + " -> " +
                model->prediction + ")\n";
    }
    return f;
  };
  return job;
}

StatusOr<TrainJob> ProgramJob(const TrainOptions& o, bool* usage) {
  std::error_code ec;
  // The programs: a file, or a directory holding main.pdmodel (or one
  // *.pdmodel) and, unless --startup names one, startup.pdmodel.
  std::string main_path = o.program, startup_path = o.startup;
  if (fs::is_directory(o.program, ec)) {
    const fs::path dir(o.program);
    if (fs::exists(dir / "main.pdmodel", ec)) {
      main_path = (dir / "main.pdmodel").string();
    } else {
      PAREX_ASSIGN_OR_RETURN(main_path, OnlyPdmodel(o.program));
    }
    if (startup_path.empty() && fs::exists(dir / "startup.pdmodel", ec)) {
      startup_path = (dir / "startup.pdmodel").string();
    }
  } else if (!fs::exists(o.program, ec)) {
    return Usage(usage,
                 NotFound("--program: '" + o.program + "' does not exist"));
  }
  if (startup_path.empty() && o.params.empty()) {
    return Usage(
        usage, InvalidArgument(
                   "--program '" + o.program +
                   "': its persistables need --startup PROGRAM or --params DIR "
                   "(or a startup.pdmodel beside main.pdmodel)"));
  }
  TrainJob job;
  PAREX_ASSIGN_OR_RETURN(job.main, LoadValidProgram(main_path, "--program"));
  const bool has_startup = !startup_path.empty();
  if (has_startup) {
    PAREX_ASSIGN_OR_RETURN(job.startup,
                           LoadValidProgram(startup_path, "--startup"));
  }
  if (!o.params.empty() && !fs::is_directory(o.params, ec)) {
    return Usage(usage,
                 NotFound("--params: '" + o.params + "' is not a directory"));
  }
  const Block& block = job.main.global_block();
  job.title = "program '" + main_path + "'";

  // The loss: --loss, else the one Fluid marked.
  if (!o.loss.empty()) {
    if (block.FindVar(o.loss) == nullptr) {
      return Usage(usage, NotFound("--loss: the program '" + main_path +
                                   "' has no variable '" + o.loss + "'"));
    }
    job.loss = o.loss;
  } else {
    const std::vector<std::string> marked = MarkedLosses(block);
    if (marked.size() != 1) {
      std::string names;
      for (const std::string& m : marked)
        names += (names.empty() ? "" : ", ") + m;
      return Usage(
          usage, InvalidArgument(
                     "the program '" + main_path + "' " +
                     (marked.empty() ? std::string("marks no op as its loss")
                                     : "marks several losses (" + names + ")") +
                     "; name the loss with --loss"));
    }
    job.loss = marked[0];
  }
  if (!HasBackwardOps(block)) {
    return Usage(usage,
                 InvalidArgument("the program '" + main_path +
                                 "' has no backward ops: it is not a training "
                                 "program (minimize() adds them)"));
  }
  std::set<std::string> params;
  for (const auto& op : block.ops()) {
    if (op->type() == "accuracy" && job.accuracy.empty()) {
      job.accuracy = op->FirstOutput("Accuracy");
    }
    if ((OpRole(*op) & kOpRoleOptimize) != 0 &&
        !op->FirstInput("Param").empty()) {
      params.insert(op->FirstInput("Param"));
    }
  }
  job.params.assign(params.begin(), params.end());

  // --lr-schedule sets the optimizers' LearningRate variables, which must be
  // plain persistables: a program that computes its rate (an in-graph
  // schedule) runs as it is.
  if (!o.lr_schedule.empty()) {
    StatusOr<LrSchedule> schedule = ParseLrSchedule(o.lr_schedule);
    if (!schedule.ok()) return Usage(usage, schedule.status());
    std::set<std::string> lr_vars, written;
    for (const auto& op : block.ops()) {
      for (const std::string& out : op->OutputArgumentNames())
        written.insert(out);
      if ((OpRole(*op) & kOpRoleOptimize) != 0 &&
          !op->FirstInput("LearningRate").empty()) {
        lr_vars.insert(op->FirstInput("LearningRate"));
      }
    }
    if (lr_vars.empty()) {
      return Usage(
          usage, InvalidArgument("--lr-schedule: the program '" + main_path +
                                 "' has no optimizer op with a LearningRate"));
    }
    for (const std::string& v : lr_vars) {
      const VarDesc* var = block.FindVar(v);
      if (var == nullptr || !var->persistable() || written.count(v) > 0) {
        return Usage(
            usage, InvalidArgument(
                       "--lr-schedule: the program '" + main_path +
                       "' computes its learning rate '" + v +
                       "' itself (an in-graph schedule); run it without one"));
      }
    }
    job.lr_vars.assign(lr_vars.begin(), lr_vars.end());
    job.lr_at = *schedule;
  }

  // The data: NAME=FILE.npy per fed variable.
  PAREX_ASSIGN_OR_RETURN(
      job.columns, ReadColumns(o.data, "--data", block, main_path, usage));
  std::set<std::string> fed;
  for (const auto& [name, t] : job.columns) fed.insert(name);
  for (const std::string& need : NeededFeeds(block)) {
    if (fed.count(need) == 0) {
      return Usage(
          usage,
          InvalidArgument("the program '" + main_path + "' reads '" + need +
                          "', which no --data " + need + "=FILE.npy feeds"));
    }
  }
  if (job.columns.empty()) {
    return Usage(
        usage, InvalidArgument("--program needs its data: --data NAME=FILE.npy "
                               "for each variable it reads"));
  }
  for (const std::string& f : o.fetch) {
    if (block.FindVar(f) == nullptr) {
      return Usage(usage, NotFound("--fetch: the program '" + main_path +
                                   "' has no variable '" + f + "'"));
    }
    job.fetches.push_back(f);
  }
  if (!o.eval_data.empty()) {
    PAREX_ASSIGN_OR_RETURN(
        job.eval_columns,
        ReadColumns(o.eval_data, "--eval-data", block, main_path, usage));
    std::vector<std::string> eval_feeds, eval_fetches = {job.loss};
    for (const auto& [name, t] : job.eval_columns) eval_feeds.push_back(name);
    if (!job.accuracy.empty()) eval_fetches.push_back(job.accuracy);
    StatusOr<Program> pruned = Prune(job.main, eval_feeds, eval_fetches);
    if (!pruned.ok()) {
      return Usage(usage, pruned.status().WithContext(
                              "--eval-data (the evaluation program)"));
    }
    job.eval_program = std::move(*pruned);
  }
  job.default_epochs = 1;
  job.default_batch = 32;
  job.default_save = "parex-" + fs::path(main_path).stem().string();
  job.identity =
      "--loss " + job.loss + " --lr-schedule '" + o.lr_schedule + "' --data";
  for (const auto& [name, t] : job.columns) {
    job.identity += " " + name + ":" + std::to_string(t.dim(0)) + ":" +
                    Sha256Hex(std::string(
                        static_cast<const char*>(t.raw_data()), t.bytes()));
  }

  auto main = std::make_shared<Program>(job.main);
  auto startup = std::make_shared<Program>(job.startup);
  const std::string params_dir = o.params;
  job.init = [main, startup, has_startup, params_dir](Scope* scope) -> Status {
    if (has_startup) {
      ReferenceExecutor executor;
      PAREX_RETURN_IF_ERROR(executor.Run(*startup, scope, {}, {})
                                .status()
                                .WithContext("--startup"));
    }
    if (!params_dir.empty()) {
      PAREX_RETURN_IF_ERROR(
          LoadPersistables(*main, params_dir, scope).WithContext("--params"));
    }
    return Status::Ok();
  };
  job.finish = [main](Scope* scope, bool writer,
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
  return job;
}

}  // namespace parex::cli
