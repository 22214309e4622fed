// Training the example models of apps/models.h with the reference executor:
// they learn (thresholds below the full runs of train_example, on fewer
// epochs and data subsets), runs repeat bit for bit, saved inference models
// reproduce the predictions, and a resumed checkpoint continues exactly.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "apps/datasets.h"
#include "apps/models.h"
#include "kernels/io/model_io.h"

namespace parex {
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

BatchReader MakeReader(const ExampleProgram& model, const Tensor& x,
                       const Tensor& y, int64_t batch_size, uint64_t seed) {
  auto reader = BatchReader::Create({{model.input, x}, {model.label, y}},
                                    {batch_size, true, seed, false});
  PAREX_CHECK(reader.ok(), reader.status().ToString());
  return std::move(reader).value();
}

ExampleProgram Build(ExampleKind kind, int seed = 1) {
  ExampleOptions options;
  options.random_seed = seed;
  auto model = BuildExample(kind, options);
  PAREX_CHECK(model.ok(), model.status().ToString());
  return std::move(model).value();
}

// Builds, initialises and trains `epochs` epochs; returns the losses.
struct TrainedRun {
  ExampleProgram model;
  Scope scope;
  std::unique_ptr<Trainer> trainer;
  std::vector<double> losses;

  TrainedRun(ExampleKind kind, const Tensor& x, const Tensor& y,
             int64_t batch_size, int64_t epochs, int seed = 1)
      : model(Build(kind, seed)) {
    trainer = std::make_unique<Trainer>(&model, &scope);
    Status started = trainer->RunStartup();
    PAREX_CHECK(started.ok(), started.ToString());
    auto out =
        trainer->Train(MakeReader(model, x, y, batch_size, seed), epochs);
    PAREX_CHECK(out.ok(), out.status().ToString());
    losses = std::move(out).value();
  }
};

void Report(const char* what, double value) {
  std::printf("[   info   ] %s %.4f\n", what, value);
}

std::string FreshDir(const std::string& name) {
  const std::string dir = kTmp + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(ModelsTrainingTest, FitALineReachesTheBooksTestError) {
  const ExampleData* d = Housing();
  TrainedRun run(ExampleKind::kFitALine, d->train_x, d->train_y, 20, 100);
  ASSERT_EQ(run.losses.size(), 100u * 21);
  auto eval = run.trainer->Evaluate(d->test_x, d->test_y);
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  EXPECT_EQ(eval->rows, 102);
  Report("fit_a_line test MSE", eval->mse);
  EXPECT_LT(eval->mse, 25.0);
  EXPECT_LT(run.losses.back(), run.losses.front() / 4);
}

TEST(ModelsTrainingTest, DigitsMlpClassifiesHeldOutDigits) {
  const ExampleData* d = Digits();
  TrainedRun run(ExampleKind::kDigitsMlp, d->train_x, d->train_y, 32, 10);
  auto eval = run.trainer->Evaluate(d->test_x, d->test_y);
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  EXPECT_EQ(eval->rows, 360);
  Report("digits_mlp test accuracy", eval->accuracy);
  EXPECT_GE(eval->accuracy, 0.92);
}

TEST(ModelsTrainingTest, FashionMlpLearnsOnASubset) {
  REQUIRE_FASHION();
  const ExampleData* d = Fashion();
  TrainedRun run(ExampleKind::kFashionMlp, d->train_x.Slice(0, 10000),
                 d->train_y.Slice(0, 10000), 64, 2);
  auto eval =
      run.trainer->Evaluate(d->test_x.Slice(0, 2000), d->test_y.Slice(0, 2000));
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  Report("fashion_mlp subset test accuracy", eval->accuracy);
  EXPECT_GE(eval->accuracy, 0.78);
}

TEST(ModelsTrainingTest, FashionCnnLearnsOnASubset) {
  REQUIRE_FASHION();
  const ExampleData* d = Fashion();
  TrainedRun run(ExampleKind::kFashionCnn, d->train_x.Slice(0, 4000),
                 d->train_y.Slice(0, 4000), 32, 1);
  auto eval =
      run.trainer->Evaluate(d->test_x.Slice(0, 1000), d->test_y.Slice(0, 1000));
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  Report("fashion_cnn subset test accuracy", eval->accuracy);
  EXPECT_GE(eval->accuracy, 0.72);
}

TEST(ModelsTrainingTest, SameSeedSameLosses) {
  const ExampleData* d = Digits();
  const Tensor x = d->train_x.Slice(0, 1440), y = d->train_y.Slice(0, 1440);
  TrainedRun a(ExampleKind::kDigitsMlp, x, y, 32, 2, 5);
  TrainedRun b(ExampleKind::kDigitsMlp, x, y, 32, 2, 5);
  TrainedRun c(ExampleKind::kDigitsMlp, x, y, 32, 2, 6);
  ASSERT_EQ(a.losses.size(), 2u * 45);
  EXPECT_EQ(a.losses, b.losses);  // bit for bit
  EXPECT_NE(a.losses, c.losses);
}

TEST(ModelsTrainingTest, SameSeedSameLossesWithBatchNorm) {
  REQUIRE_FASHION();
  const ExampleData* d = Fashion();
  const Tensor x = d->train_x.Slice(0, 256), y = d->train_y.Slice(0, 256);
  TrainedRun a(ExampleKind::kFashionCnn, x, y, 32, 1, 3);
  TrainedRun b(ExampleKind::kFashionCnn, x, y, 32, 1, 3);
  EXPECT_EQ(a.losses, b.losses);
}

// The saved program and parameters, loaded into a fresh scope, give the
// trainer's own predictions exactly.
void CheckInferenceRoundTrip(ExampleKind kind, const Tensor& x, const Tensor& y,
                             const Tensor& probe) {
  TrainedRun run(kind, x, y, 32, 1);
  auto expected = run.trainer->Predict(probe);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  const std::string dir =
      FreshDir(std::string("inference_") + ExampleName(kind));
  ASSERT_TRUE(run.trainer->SaveInferenceModel(dir).ok());

  Scope scope;
  auto loaded = LoadInferenceModel(dir, &scope);
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

TEST(ModelsTrainingTest, SavedInferenceModelReproducesPredictions) {
  const ExampleData* d = Digits();
  CheckInferenceRoundTrip(ExampleKind::kDigitsMlp, d->train_x, d->train_y,
                          d->test_x);
  const ExampleData* h = Housing();
  CheckInferenceRoundTrip(ExampleKind::kFitALine, h->train_x, h->train_y,
                          h->test_x);
}

TEST(ModelsTrainingTest, SavedCnnWithBatchNormReproducesPredictions) {
  REQUIRE_FASHION();
  const ExampleData* d = Fashion();
  CheckInferenceRoundTrip(ExampleKind::kFashionCnn, d->train_x.Slice(0, 256),
                          d->train_y.Slice(0, 256), d->test_x.Slice(0, 100));
}

// Train k steps, checkpoint, resume in a fresh scope and finish: the losses
// and final parameters are those of an uninterrupted run, bit for bit.
void CheckResume(ExampleKind kind, const Tensor& x, const Tensor& y,
                 int64_t batch_size, int64_t epochs, int64_t stop_after) {
  TrainedRun full(kind, x, y, batch_size, epochs, 11);
  ASSERT_GT(static_cast<int64_t>(full.losses.size()), stop_after);

  const std::string dir =
      FreshDir(std::string("checkpoint_") + ExampleName(kind));
  ExampleProgram model = Build(kind, 11);
  const BatchReader reader = MakeReader(model, x, y, batch_size, 11);
  std::vector<double> losses;
  {
    Scope scope;
    Trainer first(&model, &scope);
    ASSERT_TRUE(first.RunStartup().ok());
    auto part = first.Train(reader, epochs, stop_after);
    ASSERT_TRUE(part.ok()) << part.status().ToString();
    losses = *part;
    EXPECT_FALSE(HasCheckpoint(dir));
    ASSERT_TRUE(first.SaveCheckpoint(dir).ok());
    EXPECT_TRUE(HasCheckpoint(dir));
  }
  Scope scope;
  Trainer second(&model, &scope);
  Status loaded = second.LoadCheckpoint(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  EXPECT_EQ(second.state().step, stop_after);
  auto rest = second.Train(reader, epochs);
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  losses.insert(losses.end(), rest->begin(), rest->end());
  EXPECT_EQ(losses, full.losses);
  for (const std::string& name : PersistableTensorNames(model.main)) {
    const Tensor* a = full.scope.FindVar(name)->GetTensor();
    const Tensor* b = scope.FindVar(name)->GetTensor();
    ASSERT_TRUE(a != nullptr && b != nullptr) << name;
    ASSERT_EQ(a->bytes(), b->bytes()) << name;
    EXPECT_EQ(std::memcmp(a->raw_data(), b->raw_data(), a->bytes()), 0) << name;
  }
}

TEST(ModelsTrainingTest, ResumedCheckpointContinuesBitIdentically) {
  // SGD on fit_a_line; Adam (moments, beta powers) on the digits MLP, stopped
  // in the middle of the second epoch.
  const ExampleData* h = Housing();
  CheckResume(ExampleKind::kFitALine, h->train_x, h->train_y, 20, 3, 30);
  const ExampleData* d = Digits();
  CheckResume(ExampleKind::kDigitsMlp, d->train_x.Slice(0, 1440),
              d->train_y.Slice(0, 1440), 32, 3, 60);
}

TEST(ModelsTrainingTest, ResumedCnnCheckpointKeepsBatchNormStatistics) {
  REQUIRE_FASHION();
  const ExampleData* d = Fashion();
  CheckResume(ExampleKind::kFashionCnn, d->train_x.Slice(0, 192),
              d->train_y.Slice(0, 192), 32, 2, 7);
}

// What train_example --checkpoint does: save from the epoch callback.
TEST(ModelsTrainingTest, CheckpointSavedAtAnEpochEndResumesTheNextEpoch) {
  const ExampleData* h = Housing();
  TrainedRun full(ExampleKind::kFitALine, h->train_x, h->train_y, 20, 3, 4);
  ExampleProgram model = Build(ExampleKind::kFitALine, 4);
  const BatchReader reader = MakeReader(model, h->train_x, h->train_y, 20, 4);
  const std::string dir = FreshDir("checkpoint_epoch_end");
  std::vector<double> losses;
  {
    Scope scope;
    Trainer first(&model, &scope);
    ASSERT_TRUE(first.RunStartup().ok());
    Status saved;
    auto part = first.Train(reader, 2, -1, [&](const EpochSummary& s) {
      EXPECT_EQ(first.state().epoch, s.epoch + 1);
      EXPECT_EQ(first.state().batch, 0);
      saved = first.SaveCheckpoint(dir);
    });
    ASSERT_TRUE(part.ok()) << part.status().ToString();
    ASSERT_TRUE(saved.ok()) << saved.ToString();
    losses = *part;
  }
  Scope scope;
  Trainer second(&model, &scope);
  ASSERT_TRUE(second.LoadCheckpoint(dir).ok());
  EXPECT_EQ(second.state().epoch, 2);
  EXPECT_EQ(second.state().step, 42);
  auto rest = second.Train(reader, 3);
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  losses.insert(losses.end(), rest->begin(), rest->end());
  EXPECT_EQ(losses, full.losses);
}

TEST(ModelsTrainingTest, CheckpointErrorsNameTheDirectory) {
  ExampleProgram model = Build(ExampleKind::kFitALine);
  Scope scope;
  Trainer trainer(&model, &scope);
  const std::string dir = FreshDir("no_checkpoint");
  Status missing = trainer.LoadCheckpoint(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find(dir), std::string::npos)
      << missing.ToString();
  // A state file without the parameters is not a checkpoint either.
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/trainer_state") << "0 0 0\n";
  Status partial = trainer.LoadCheckpoint(dir);
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.message().find("fc_0"), std::string::npos)
      << partial.ToString();
}

}  // namespace
}  // namespace parex
