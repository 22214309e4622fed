// train_example: trains one of the example models of apps/models.h with the
// reference executor, printing the mean loss of every epoch and the final
// test metric (MSE for fit_a_line, accuracy for the classifiers).
//
//   train_example --model {fit_a_line,digits_mlp,fashion_mlp,fashion_cnn}
//       [--epochs N] [--batch-size B] [--seed S] [--optimizer
//       sgd|momentum|adam]
//       [--lr R] [--train-limit N] [--save-inference DIR] [--checkpoint DIR]
//       [--save-programs DIR]
//
// --checkpoint DIR saves a checkpoint after every epoch and, when DIR
// already holds one, resumes from it (same model, seed and batch size).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "apps/datasets.h"
#include "apps/models.h"

namespace {

struct Defaults {
  int epochs;
  int64_t batch_size;
};

Defaults DefaultsOf(parex::ExampleKind kind) {
  switch (kind) {
    case parex::ExampleKind::kFitALine:
      return {100, 20};
    case parex::ExampleKind::kDigitsMlp:
      return {20, 32};
    case parex::ExampleKind::kFashionMlp:
      return {10, 64};
    case parex::ExampleKind::kFashionCnn:
      return {3, 64};
  }
  return {1, 32};
}

int Fail(const parex::Status& status) {
  std::fprintf(stderr, "train_example: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Trains a parex example model with the reference executor"};
  std::string model_name;
  int epochs = 0;
  int64_t batch_size = 0;
  int seed = 1;
  std::string optimizer_name;
  double lr = 0;
  int64_t train_limit = 0;
  std::string save_inference, checkpoint;
  std::string data_dir = PAREX_DEFAULT_DATA_DIR;
  std::string fashion_dir = parex::kFashionMnistDir;
  app.add_option("--model", model_name,
                 "fit_a_line, digits_mlp, fashion_mlp or fashion_cnn")
      ->required();
  app.add_option("--epochs", epochs, "epochs (0: the model's default)");
  app.add_option("--batch-size", batch_size,
                 "batch size (0: the model's default)");
  app.add_option("--seed", seed,
                 "seed of the initialisers and of the shuffling")
      ->capture_default_str();
  app.add_option("--optimizer", optimizer_name,
                 "sgd, momentum or adam (default: the model's own)");
  app.add_option("--lr", lr, "learning rate (0: the model's default, 0.001)");
  app.add_option("--train-limit", train_limit,
                 "train on the first N rows only (0: all)");
  app.add_option("--save-inference", save_inference,
                 "write the inference model (input -> prediction) here");
  std::string save_programs;
  app.add_option("--save-programs", save_programs,
                 "write the training programs here (main.pdmodel, "
                 "startup.pdmodel: Paddle's format) before training");
  app.add_option("--checkpoint", checkpoint,
                 "checkpoint directory: resume from it, save every epoch");
  app.add_option("--data-dir", data_dir,
                 "boston_house_prices.csv and digits.csv.gz")
      ->capture_default_str();
  app.add_option("--fashion-dir", fashion_dir, "Fashion-MNIST idx files")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const auto wall_start = std::chrono::steady_clock::now();

  auto kind = parex::ParseExampleKind(model_name);
  if (!kind.ok()) return Fail(kind.status());
  const Defaults defaults = DefaultsOf(*kind);
  if (epochs <= 0) epochs = defaults.epochs;
  if (batch_size <= 0) batch_size = defaults.batch_size;

  parex::ExampleOptions options;
  options.random_seed = seed;
  options.learning_rate = lr;
  if (!optimizer_name.empty()) {
    auto which = parex::ParseOptimizerKind(optimizer_name);
    if (!which.ok()) return Fail(which.status());
    options.optimizer = *which;
  }
  auto model = parex::BuildExample(*kind, options);
  if (!model.ok()) return Fail(model.status());
  if (!save_programs.empty()) {
    parex::Status saved = model->main.Save(save_programs + "/main.pdmodel");
    if (saved.ok())
      saved = model->startup.Save(save_programs + "/startup.pdmodel");
    if (!saved.ok()) return Fail(saved);
  }

  auto data = parex::LoadExampleData(*kind, data_dir, fashion_dir);
  if (!data.ok()) return Fail(data.status());
  parex::Tensor train_x = data->train_x, train_y = data->train_y;
  const parex::Tensor& test_x = data->test_x;
  const parex::Tensor& test_y = data->test_y;
  if (train_limit > 0 && train_limit < train_x.dim(0)) {
    train_x = train_x.Slice(0, train_limit);
    train_y = train_y.Slice(0, train_limit);
  }
  auto reader = parex::BatchReader::Create(
      {{model->input, train_x}, {model->label, train_y}},
      {batch_size, /*shuffle=*/true, static_cast<uint64_t>(seed),
       /*drop_last=*/false});
  if (!reader.ok()) return Fail(reader.status());
  std::printf(
      "%s: %lld train rows, %lld test rows, %d epochs of %lld batches "
      "of %lld, seed %d\n",
      parex::ExampleName(*kind), static_cast<long long>(train_x.dim(0)),
      static_cast<long long>(test_x.dim(0)), epochs,
      static_cast<long long>(reader->num_batches()),
      static_cast<long long>(batch_size), seed);

  parex::Scope scope;
  parex::Trainer trainer(&*model, &scope);
  if (!checkpoint.empty() && parex::HasCheckpoint(checkpoint)) {
    parex::Status loaded = trainer.LoadCheckpoint(checkpoint);
    if (!loaded.ok()) return Fail(loaded);
    std::printf("resumed from '%s' at epoch %lld, batch %lld\n",
                checkpoint.c_str(),
                static_cast<long long>(trainer.state().epoch),
                static_cast<long long>(trainer.state().batch));
  } else {
    parex::Status started = trainer.RunStartup();
    if (!started.ok()) return Fail(started);
  }

  parex::Status epoch_error;
  auto losses =
      trainer.Train(*reader, epochs, -1, [&](const parex::EpochSummary& s) {
        if (model->is_classifier()) {
          std::printf(
              "epoch %lld: loss %.5f, train accuracy %.4f (%lld steps, "
              "%.1f s)\n",
              static_cast<long long>(s.epoch), s.mean_loss, s.mean_accuracy,
              static_cast<long long>(s.steps), s.seconds);
        } else {
          std::printf("epoch %lld: loss %.5f (%lld steps, %.2f s)\n",
                      static_cast<long long>(s.epoch), s.mean_loss,
                      static_cast<long long>(s.steps), s.seconds);
        }
        std::fflush(stdout);
        if (!checkpoint.empty() && epoch_error.ok()) {
          epoch_error = trainer.SaveCheckpoint(checkpoint);
        }
      });
  if (!losses.ok()) return Fail(losses.status());
  if (!epoch_error.ok()) return Fail(epoch_error);

  auto eval = trainer.Evaluate(test_x, test_y);
  if (!eval.ok()) return Fail(eval.status());
  if (model->is_classifier()) {
    std::printf("%s: test accuracy %.4f on %lld rows\n",
                parex::ExampleName(*kind), eval->accuracy,
                static_cast<long long>(eval->rows));
  } else {
    std::printf("%s: test MSE %.4f on %lld rows\n", parex::ExampleName(*kind),
                eval->mse, static_cast<long long>(eval->rows));
  }
  if (!save_inference.empty()) {
    parex::Status saved = trainer.SaveInferenceModel(save_inference);
    if (!saved.ok()) return Fail(saved);
    std::printf("inference model written to '%s'\n", save_inference.c_str());
  }
  std::printf("wall time %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            wall_start)
                  .count());
  return 0;
}
