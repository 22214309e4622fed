// Writes the seed programs of the program and run_step corpora that parex
// builds itself: the main and startup programs of the four example models
// (training programs with autodiff and optimizers, so the fuzzers start from
// every op the builder emits), and with --regressions the hand-minimised
// programs of crashes found so far. Run by hand; its output is committed:
//   build/tests/fuzz/parex_fuzz_make_corpus tests/fuzz/corpus/program
//   build/tests/fuzz/parex_fuzz_make_corpus --regressions
//   tests/fuzz/regressions/program
#include <climits>
#include <cstdio>
#include <string>

#include "apps/models.h"

namespace {

using namespace parex;

// elementwise_add with axis INT_MAX: shape inference computed axis + rank
// in int and overflowed (UBSan, found by the attribute-extremes test).
Program ElementwiseAxisOverflow() {
  Program p;
  Block& b = p.global_block();
  for (const auto& [name, dims] : {std::pair<const char*, Dims>{"x", {-1, 4}},
                                   {"y", {4}},
                                   {"out", {-1, 4}}}) {
    VarDesc* v = b.Var(name);
    v->SetDType(DType::kFP32);
    v->SetDims(dims);
  }
  OpDesc* op = b.AppendOp("elementwise_add");
  op->SetInput("X", {"x"});
  op->SetInput("Y", {"y"});
  op->SetOutput("Out", {"out"});
  op->SetAttr<int>("axis", INT_MAX);
  return p;
}

int WriteRegressions(const std::string& dir) {
  for (const auto& [name, program] : {std::pair<const char*, Program>{
           "elementwise_axis_int_max", ElementwiseAxisOverflow()}}) {
    const std::string path = dir + "/" + name + ".pdmodel";
    if (Status s = program.Save(path); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("wrote %s\n", path.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--regressions") {
    return WriteRegressions(argv[2]);
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s [--regressions] OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  for (ExampleKind kind :
       {ExampleKind::kFitALine, ExampleKind::kDigitsMlp,
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
