#include "apps/train/train_job.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "apps/models.h"
#include "apps/reader.h"
#include "graph/builder/prune.h"
#include "kernels/reference_executor.h"

namespace parex::train {
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
  reader.set_batch_allocator(eval->feed_allocator());
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

namespace {

// An example's end of training: its test set evaluated (accuracy or MSE)
// and, on the writer, the inference model saved to `save`.
StatusOr<TrainJob::Finished> FinishExample(const ExampleProgram& model,
                                           const ExampleData& data,
                                           Scope* scope, bool writer,
                                           const std::string& save) {
  ExampleInference trained(&model, scope);
  PAREX_ASSIGN_OR_RETURN(Evaluation eval,
                         trained.Evaluate(data.test_x, data.test_y));
  TrainJob::Finished f;
  char line[160];
  if (model.is_classifier()) {
    std::snprintf(line, sizeof(line), "test accuracy   %.4f on %lld rows\n",
                  eval.accuracy, static_cast<long long>(eval.rows));
  } else {
    std::snprintf(line, sizeof(line), "test MSE        %.4f on %lld rows\n",
                  eval.mse, static_cast<long long>(eval.rows));
  }
  f.report = line;
  if (writer) {
    PAREX_RETURN_IF_ERROR(trained.SaveInferenceModel(save));
    f.saved = "model saved to  " + save + " (inference model: " + model.input +
              " -> " + model.prediction + ")\n";
  }
  return f;
}

}  // namespace

StatusOr<TrainJob> ExampleJob(const TrainOptions& o, bool* usage) {
  StatusOr<ExampleKind> kind = ParseExampleKind(o.model);
  if (!kind.ok()) {
    *usage = true;
    return kind.status();
  }
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
  job.init = [model](Scope* scope,
                     const std::vector<std::string>& skip) -> Status {
    ReferenceExecutor executor;
    auto ran =
        executor.Run(WithoutOpsMakingOnly(model->startup, skip), scope, {}, {});
    if (!ran.ok()) return ran.status().WithContext("startup program");
    return Status::Ok();
  };
  job.finish = [model, data](Scope* scope, bool writer,
                             const std::string& save) {
    return FinishExample(*model, *data, scope, writer, save);
  };
  return job;
}

Status SavePrograms(const TrainJob& job, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return IoError("--save-programs: cannot create '" + dir +
                   "': " + ec.message());
  }
  PAREX_RETURN_IF_ERROR(job.main.Save(dir + "/main.pdmodel"));
  return job.startup.Save(dir + "/startup.pdmodel");
}

}  // namespace parex::train
