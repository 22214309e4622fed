// The example programs parex trains and tests with (Paddle book style,
// built with the layers API of graph/builder/layers.h into a main and a startup
// program). Below apps/ so that graph and actor tests build them without the
// dataset readers and trainer (apps/models.h).
//
//   fit_a_line   UCI housing: fc 13->1, square_error_cost, mean; SGD 0.001
//                (Paddle book 01.fit_a_line).
//   digits_mlp   8x8 digits: fc 64->512 tanh, fc ->10,
//                softmax_with_cross_entropy. (A 64-wide relu layer tops out
//                near 0.92 on the held-out last 20% of the file, a 512-wide
//                one near 0.93; with tanh and the shifted, standardised
//                training images of LoadExampleData it reaches 0.95-0.96.)
//   fashion_mlp  Fashion-MNIST [1,28,28]: fc 784->256 relu, ->128 relu, ->10.
//   fashion_cnn  Fashion-MNIST: twice (conv2d 5x5 without bias, batch_norm,
//                relu, pool2d max 2x2 stride 2) with 20 and 50 filters, then
//                fc 800->10 (Paddle book 02.recognize_digits' convolutional
//                net with batch_norm before the pooling).
// The classifiers train with Adam (learning rate 0.001) unless told
// otherwise; their prediction is softmax(logits), a branch off the loss path.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "graph/builder/backward.h"
#include "graph/ir/program.h"

namespace parex {

enum class ExampleKind { kFitALine, kDigitsMlp, kFashionMlp, kFashionCnn };

// "fit_a_line", "digits_mlp", "fashion_mlp", "fashion_cnn".
const char* ExampleName(ExampleKind kind);
StatusOr<ExampleKind> ParseExampleKind(const std::string& name);

enum class OptimizerKind { kSGD, kMomentum, kAdam };
StatusOr<OptimizerKind> ParseOptimizerKind(const std::string& name);

struct ExampleOptions {
  // Element type of the data layers and so of every parameter: fp32 for
  // training, fp64 for gradient checks.
  DType dtype = DType::kFP32;
  // Program.random_seed: the seed of every parameter initialiser.
  int random_seed = 1;
  // false: forward and loss only (no backward, no optimizer).
  bool minimize = true;
  // The example's own choice when unset (see the file comment).
  std::optional<OptimizerKind> optimizer;
  double learning_rate = 0;  // 0: the example's own (0.001)
  double momentum = 0.9;     // kMomentum
};

// A built example. Programs own their vars; names stay valid while they live.
struct ExampleProgram {
  ExampleKind kind;
  Program main, startup;
  std::string input;       // features: fp [-1, 13] / [-1, 64] / [-1, 1, 28, 28]
  std::string label;       // fp [-1, 1] (regression) or int64 [-1, 1]
  std::string loss;        // scalar [1]
  std::string prediction;  // [-1, 1] price, or [-1, 10] class probabilities
  std::string accuracy;    // fp32 [1] batch accuracy; "" for regression
  std::vector<ParamGrad> params;  // updated parameters (empty unless minimize)

  std::vector<std::string> feed_names() const { return {input, label}; }
  bool is_classifier() const { return !accuracy.empty(); }
};

StatusOr<ExampleProgram> BuildExample(ExampleKind kind,
                                      const ExampleOptions& options = {});

}  // namespace parex
