// Training the example models with TrainSession (apps/train/), as `parex
// train` does, on one CPU place: they learn (thresholds below the full
// runs, on fewer epochs and data subsets), runs repeat bit for bit, the
// saved inference models reproduce the predictions, and a resumed
// checkpoint continues exactly.
#include "apps/train/train_session.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "apps/datasets.h"
#include "apps/models.h"
#include "apps/train/checkpoint.h"
#include "base/file_io.h"
#include "kernels/io/model_io.h"

namespace parex::train {
namespace {

const std::string kData = PAREX_DATA_DIR;
const std::string kTmp = PAREX_TEST_TMP_DIR;

// Each example's data (LoadExampleData), read once for the whole file;
// nullptr when it is not installed (Fashion-MNIST comes from its own Debian
// package).
const ExampleData* Data(ExampleKind kind) {
  static std::map<ExampleKind, std::unique_ptr<ExampleData>> cache;
  auto it = cache.find(kind);
  if (it == cache.end()) {
    std::unique_ptr<ExampleData> data;
    const bool fashion =
        kind == ExampleKind::kFashionMlp || kind == ExampleKind::kFashionCnn;
    if (!fashion || std::ifstream(std::string(kFashionMnistDir) +
                                  "/train-images-idx3-ubyte.gz")) {
      auto loaded = LoadExampleData(kind, kData, kFashionMnistDir);
      PAREX_CHECK(loaded.ok(), loaded.status().ToString());
      data = std::make_unique<ExampleData>(std::move(loaded).value());
    }
    it = cache.emplace(kind, std::move(data)).first;
  }
  return it->second.get();
}

const ExampleData* Housing() { return Data(ExampleKind::kFitALine); }
const ExampleData* Digits() { return Data(ExampleKind::kDigitsMlp); }
const ExampleData* Fashion() { return Data(ExampleKind::kFashionMlp); }

#define REQUIRE_FASHION()                                                     \
  if (Fashion() == nullptr) {                                                 \
    GTEST_SKIP() << "Fashion-MNIST is not installed in " << kFashionMnistDir; \
  }

ExampleProgram Build(ExampleKind kind, int seed = 1) {
  ExampleOptions options;
  options.random_seed = seed;
  auto model = BuildExample(kind, options);
  PAREX_CHECK(model.ok(), model.status().ToString());
  return std::move(model).value();
}

std::string FreshDir(const std::string& name) {
  const std::string dir = kTmp + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The "loss" of each step line of a --metrics file, in order. A step's
// loss on one place is a float, which %.9g writes exactly.
std::vector<double> Losses(const std::string& path) {
  std::vector<double> losses;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find("\"loss\": ");
    if (line.rfind("{\"step\"", 0) == 0 && at != std::string::npos)
      losses.push_back(std::strtod(line.c_str() + at + 8, nullptr));
  }
  return losses;
}

// How a test trains example `kind` in directory `dir`: one CPU place,
// metrics into dir/metrics.jsonl, the model into dir/model.
TrainOptions Options(ExampleKind kind, const std::string& dir, int64_t batch,
                     int epochs, int seed = 1) {
  std::filesystem::create_directories(dir);
  TrainOptions o;
  o.model = ExampleName(kind);
  o.places = "cpu:1";
  o.batch = batch;
  o.epochs = epochs;
  o.seed = seed;
  o.progress = false;
  o.data_dir = kData;
  o.fashion_dir = kFashionMnistDir;
  o.metrics = dir + "/metrics.jsonl";
  o.save = dir + "/model";
  return o;
}

// Trains as `parex train` would with `o`, on the first `rows` training rows
// (all when 0); keeps the session (its trained scope) and the step losses.
struct TrainedRun {
  std::unique_ptr<TrainSession> session;
  std::vector<double> losses;
  ExampleProgram model;  // the same program, for evaluation

  explicit TrainedRun(const TrainOptions& o, int64_t rows = 0)
      : model(Build(*ParseExampleKind(o.model), o.seed)) {
    bool usage = false;
    StatusOr<TrainJob> job = ExampleJob(o, &usage);
    PAREX_CHECK(job.ok(), job.status().ToString());
    for (auto& [name, t] : job->columns) {
      if (rows > 0) t = t.Slice(0, rows);
    }
    TrainPlan plan;
    plan.places = *ParsePlaceList(o.places);
    plan.epochs = *o.epochs;
    plan.batch = *o.batch;
    Status outputs = SetOutputs(o, "", job->default_save, &plan);
    PAREX_CHECK(outputs.ok(), outputs.ToString());
    StatusOr<BatchReader> reader = BatchReader::Create(
        job->columns, {*o.batch, o.shuffle, static_cast<uint64_t>(o.seed),
                       /*drop_last=*/false});
    PAREX_CHECK(reader.ok(), reader.status().ToString());
    session = std::make_unique<TrainSession>("train", o, std::move(*job),
                                             std::move(*reader),
                                             std::move(plan), nullptr);
    const int exit_code = session->Run();
    PAREX_CHECK(exit_code == 0,
                "training exited with " + std::to_string(exit_code));
    losses = Losses(o.metrics);
  }

  StatusOr<Evaluation> Evaluate(const Tensor& x, const Tensor& y) {
    return ExampleInference(&model, session->scope()).Evaluate(x, y);
  }
};

void Report(const char* what, double value) {
  std::printf("[   info   ] %s %.4f\n", what, value);
}

TEST(TrainSessionTest, FitALineReachesTheBooksTestError) {
  const ExampleData* d = Housing();
  const std::string dir = FreshDir("session_fit_a_line");
  TrainedRun run(Options(ExampleKind::kFitALine, dir, 20, 100));
  ASSERT_EQ(run.losses.size(), 100u * 21);
  auto eval = run.Evaluate(d->test_x, d->test_y);
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  EXPECT_EQ(eval->rows, 102);
  Report("fit_a_line test MSE", eval->mse);
  EXPECT_LT(eval->mse, 25.0);
  EXPECT_LT(run.losses.back(), run.losses.front() / 4);
}

TEST(TrainSessionTest, DigitsMlpClassifiesHeldOutDigits) {
  const ExampleData* d = Digits();
  const std::string dir = FreshDir("session_digits");
  TrainedRun run(Options(ExampleKind::kDigitsMlp, dir, 32, 10));
  auto eval = run.Evaluate(d->test_x, d->test_y);
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  EXPECT_EQ(eval->rows, 360);
  Report("digits_mlp test accuracy", eval->accuracy);
  EXPECT_GE(eval->accuracy, 0.92);
}

TEST(TrainSessionTest, FashionMlpLearnsOnASubset) {
  REQUIRE_FASHION();
  const ExampleData* d = Fashion();
  const std::string dir = FreshDir("session_fashion_mlp");
  TrainedRun run(Options(ExampleKind::kFashionMlp, dir, 64, 2), 10000);
  auto eval = run.Evaluate(d->test_x.Slice(0, 2000), d->test_y.Slice(0, 2000));
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  Report("fashion_mlp subset test accuracy", eval->accuracy);
  EXPECT_GE(eval->accuracy, 0.78);
}

TEST(TrainSessionTest, FashionCnnLearnsOnASubset) {
  REQUIRE_FASHION();
  const ExampleData* d = Fashion();
  const std::string dir = FreshDir("session_fashion_cnn");
  TrainedRun run(Options(ExampleKind::kFashionCnn, dir, 32, 1), 4000);
  auto eval = run.Evaluate(d->test_x.Slice(0, 1000), d->test_y.Slice(0, 1000));
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  Report("fashion_cnn subset test accuracy", eval->accuracy);
  EXPECT_GE(eval->accuracy, 0.72);
}

TEST(TrainSessionTest, SameSeedSameLosses) {
  const std::string dir = FreshDir("session_same_seed");
  const ExampleKind digits = ExampleKind::kDigitsMlp;
  TrainedRun a(Options(digits, dir + "/a", 32, 2, 5), 1440);
  TrainedRun b(Options(digits, dir + "/b", 32, 2, 5), 1440);
  TrainedRun c(Options(digits, dir + "/c", 32, 2, 6), 1440);
  ASSERT_EQ(a.losses.size(), 2u * 45);
  EXPECT_EQ(a.losses, b.losses);  // bit for bit
  EXPECT_NE(a.losses, c.losses);
}

TEST(TrainSessionTest, SameSeedSameLossesWithBatchNorm) {
  REQUIRE_FASHION();
  const std::string dir = FreshDir("session_same_seed_bn");
  const ExampleKind cnn = ExampleKind::kFashionCnn;
  TrainedRun a(Options(cnn, dir + "/a", 32, 1, 3), 256);
  TrainedRun b(Options(cnn, dir + "/b", 32, 1, 3), 256);
  ASSERT_EQ(a.losses.size(), 8u);
  EXPECT_EQ(a.losses, b.losses);
}

// The inference model the run saved (--save), loaded into a fresh scope,
// gives the trained model's own predictions exactly.
void CheckInferenceRoundTrip(ExampleKind kind, int64_t rows,
                             const Tensor& probe) {
  const std::string dir =
      FreshDir(std::string("session_inference_") + ExampleName(kind));
  TrainedRun run(Options(kind, dir, 32, 1), rows);
  auto expected =
      ExampleInference(&run.model, run.session->scope()).Predict(probe);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();

  Scope scope;
  auto loaded = LoadInferenceModel(dir + "/model", &scope);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->feed_names, std::vector<std::string>{run.model.input});
  EXPECT_EQ(loaded->fetch_names,
            std::vector<std::string>{run.model.prediction});
  const Block& block = loaded->program.global_block();
  EXPECT_EQ(block.op(0).type(), "feed");
  EXPECT_EQ(block.op(block.num_ops() - 1).type(), "fetch");
  for (const auto& op : block.ops()) {
    EXPECT_EQ(op->type().find("_grad"), std::string::npos) << op->Label();
    EXPECT_NE(op->type(), "adam");
    if (op->type() == "batch_norm") {
      EXPECT_TRUE(*op->GetAttr<bool>("is_test"));
    }
  }
  // Only the persistables of the pruned program: no optimizer state.
  for (const std::string& name : PersistableTensorNames(loaded->program)) {
    EXPECT_EQ(name.find("moment"), std::string::npos) << name;
  }
  ReferenceExecutor executor;
  auto got =
      executor.Run(loaded->program, &scope, {{loaded->feed_names[0], probe}},
                   {loaded->fetch_names[0]});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ((*got)[0].dims(), expected->dims());
  EXPECT_EQ(ToVector<float>((*got)[0]), ToVector<float>(*expected));
}

TEST(TrainSessionTest, SavedInferenceModelReproducesPredictions) {
  CheckInferenceRoundTrip(ExampleKind::kDigitsMlp, 0, Digits()->test_x);
  CheckInferenceRoundTrip(ExampleKind::kFitALine, 0, Housing()->test_x);
}

TEST(TrainSessionTest, SavedCnnWithBatchNormReproducesPredictions) {
  REQUIRE_FASHION();
  CheckInferenceRoundTrip(ExampleKind::kFashionCnn, 256,
                          Fashion()->test_x.Slice(0, 100));
}

void ExpectSamePersistables(const Program& main, Scope* a, Scope* b) {
  for (const std::string& name : PersistableTensorNames(main)) {
    const Tensor* x = a->FindVar(name)->GetTensor();
    const Tensor* y = b->FindVar(name)->GetTensor();
    ASSERT_TRUE(x != nullptr && y != nullptr) << name;
    ASSERT_EQ(x->bytes(), y->bytes()) << name;
    EXPECT_EQ(std::memcmp(x->raw_data(), y->raw_data(), x->bytes()), 0) << name;
  }
}

// Train k steps (--steps, the last checkpoint at the end), resume in a fresh
// session and finish: the losses and every persistable are those of an
// uninterrupted run, bit for bit.
void CheckResume(ExampleKind kind, int64_t rows, int64_t batch, int epochs,
                 int64_t stop_after) {
  const std::string dir =
      FreshDir(std::string("session_checkpoint_") + ExampleName(kind));
  TrainedRun full(Options(kind, dir + "/full", batch, epochs, 11), rows);
  ASSERT_GT(static_cast<int64_t>(full.losses.size()), stop_after);

  TrainOptions first = Options(kind, dir + "/first", batch, epochs, 11);
  first.steps = stop_after;
  first.checkpoint_dir = dir + "/ckpt";
  EXPECT_FALSE(NewestCheckpoint(first.checkpoint_dir).ok());
  std::vector<double> losses = TrainedRun(first, rows).losses;
  StatusOr<std::optional<FoundCheckpoint>> saved =
      NewestCheckpoint(first.checkpoint_dir);
  ASSERT_TRUE(saved.ok() && saved->has_value());
  EXPECT_EQ((*saved)->state.step, stop_after);

  TrainOptions second = Options(kind, dir + "/second", batch, epochs, 11);
  second.resume = first.checkpoint_dir;
  TrainedRun rest(second, rows);
  losses.insert(losses.end(), rest.losses.begin(), rest.losses.end());
  EXPECT_EQ(losses, full.losses);
  ExpectSamePersistables(full.model.main, full.session->scope(),
                         rest.session->scope());
}

TEST(TrainSessionTest, ResumedCheckpointContinuesBitIdentically) {
  // SGD on fit_a_line; Adam (moments, beta powers) on the digits MLP, stopped
  // in the middle of the second epoch.
  CheckResume(ExampleKind::kFitALine, 0, 20, 3, 30);
  CheckResume(ExampleKind::kDigitsMlp, 1440, 32, 3, 60);
}

TEST(TrainSessionTest, ResumedCnnCheckpointKeepsBatchNormStatistics) {
  REQUIRE_FASHION();
  CheckResume(ExampleKind::kFashionCnn, 192, 32, 2, 7);
}

// A run that ends at an epoch's end checkpoints there: the resumed run
// starts the next epoch.
TEST(TrainSessionTest, CheckpointSavedAtAnEpochEndResumesTheNextEpoch) {
  const std::string dir = FreshDir("session_checkpoint_epoch_end");
  const ExampleKind line = ExampleKind::kFitALine;
  TrainedRun full(Options(line, dir + "/full", 20, 3, 4));
  TrainOptions first = Options(line, dir + "/first", 20, 2, 4);
  first.checkpoint_dir = dir + "/ckpt";
  std::vector<double> losses = TrainedRun(first).losses;
  StatusOr<std::optional<FoundCheckpoint>> saved =
      NewestCheckpoint(first.checkpoint_dir);
  ASSERT_TRUE(saved.ok() && saved->has_value());
  EXPECT_EQ((*saved)->state.epoch, 2);
  EXPECT_EQ((*saved)->state.batch, 0);
  EXPECT_EQ((*saved)->state.step, 42);
  TrainOptions second = Options(line, dir + "/second", 20, 3, 4);
  second.resume = first.checkpoint_dir;
  TrainedRun rest(second);
  losses.insert(losses.end(), rest.losses.begin(), rest.losses.end());
  EXPECT_EQ(losses, full.losses);
}

TEST(TrainSessionTest, CheckpointErrorsNameTheDirectory) {
  ExampleProgram model = Build(ExampleKind::kFitALine);
  Scope scope;
  CheckpointState want;
  want.program = "p";
  want.options = "o";
  const std::string dir = FreshDir("session_no_checkpoint");
  StatusOr<FoundCheckpoint> missing = Resume(dir, model.main, want, &scope);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir), std::string::npos)
      << missing.status().ToString();
  // A state file without the parameters is not a checkpoint either.
  std::filesystem::create_directories(dir + "/ckpt-0");
  ASSERT_TRUE(WriteFileBytes(dir + "/ckpt-0/parex_state",
                             "step 0\nepoch 0\nbatch 0\nprogram p\noptions o\n")
                  .ok());
  StatusOr<FoundCheckpoint> partial = Resume(dir, model.main, want, &scope);
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("fc_0"), std::string::npos)
      << partial.status().ToString();
}

}  // namespace
}  // namespace parex::train
