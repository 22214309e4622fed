// Where the PaddlePaddle-saved programs of ../shared/paddle_models are, for
// the import tests. Built with the path CMake found; a test that needs them
// reports itself skipped, with the reason, on a machine without that folder.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace parex::testing {

inline const std::string& PaddleModelsDir() {
  static const std::string dir = PAREX_PADDLE_MODELS_DIR;
  return dir;
}

inline bool HavePaddleModels() {
  struct stat st;
  return stat((PaddleModelsDir() + "/fit_a_line/__model__").c_str(), &st) == 0;
}

// The rows of 10 values of a golden probabilities.csv (mnist_mlp), lines of
// another width (a header) skipped; empty when the file cannot be read.
inline std::vector<std::vector<double>> ReadGoldenProbabilities(
    const std::string& path) {
  std::vector<std::vector<double>> rows;
  std::ifstream csv(path);
  std::string line;
  while (std::getline(csv, line)) {
    std::stringstream fields(line);
    std::string field;
    std::vector<double> values;
    while (std::getline(fields, field, ',')) values.push_back(std::stod(field));
    if (values.size() == 10) rows.push_back(std::move(values));
  }
  return rows;
}

}  // namespace parex::testing

#define PAREX_REQUIRE_PADDLE_MODELS()                      \
  do {                                                     \
    if (!::parex::testing::HavePaddleModels())             \
      GTEST_SKIP() << "Paddle models folder missing: "     \
                   << ::parex::testing::PaddleModelsDir(); \
  } while (0)
