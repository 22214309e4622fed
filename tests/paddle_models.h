// Where the PaddlePaddle-saved programs of ../shared/paddle_models are, for
// the import tests. Built with the path CMake found; a test that needs them
// reports itself skipped, with the reason, on a machine without that folder.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

namespace parex::testing {

inline const std::string& PaddleModelsDir() {
  static const std::string dir = PAREX_PADDLE_MODELS_DIR;
  return dir;
}

inline bool HavePaddleModels() {
  struct stat st;
  return stat((PaddleModelsDir() + "/fit_a_line/__model__").c_str(), &st) == 0;
}

}  // namespace parex::testing

#define PAREX_REQUIRE_PADDLE_MODELS()                                   \
  do {                                                                  \
    if (!::parex::testing::HavePaddleModels())                          \
      GTEST_SKIP() << "Paddle models folder missing: "                  \
                   << ::parex::testing::PaddleModelsDir();              \
  } while (0)
