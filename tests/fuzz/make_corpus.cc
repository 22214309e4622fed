// Writes the seed programs of the program and run_step corpora that parex
// builds itself: the main and startup programs of the four example models
// (training programs with autodiff and optimizers, so the fuzzers start from
// every op the builder emits). Run by hand; its output is committed:
//   build/tests/fuzz/parex_fuzz_make_corpus tests/fuzz/corpus/program
#include <cstdio>
#include <string>

#include "apps/models.h"

int main(int argc, char** argv) {
  using namespace parex;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  for (ExampleKind kind : {ExampleKind::kFitALine, ExampleKind::kDigitsMlp,
                           ExampleKind::kFashionMlp, ExampleKind::kFashionCnn}) {
    StatusOr<ExampleProgram> ex = BuildExample(kind);
    if (!ex.ok()) {
      std::fprintf(stderr, "%s\n", ex.status().ToString().c_str());
      return 1;
    }
    const std::string name = ExampleName(kind);
    for (const auto& [suffix, program] :
         {std::pair<const char*, const Program*>{"main", &ex->main},
          {"startup", &ex->startup}}) {
      const std::string path = dir + "/" + name + "_" + suffix + ".pdmodel";
      if (Status s = program->Save(path); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
      std::printf("wrote %s\n", path.c_str());
    }
  }
  return 0;
}
