// ProgramBuilder, Initializer and ParamAttr: the low-level half of the builder
// API (graph/builder/layers.h builds Fluid's layers on it). A ProgramBuilder
// appends ops to block 0 of a main program and parameters, with their
// initialiser ops, to a startup program, naming everything the way Fluid does
// (fc_0.w_0, fc_0.b_0, fc_0.tmp_0, ...).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/dims.h"
#include "base/dtype.h"
#include "base/status.h"
#include "graph/ir/program.h"

namespace parex {

struct Initializer {
  enum class Kind { kDefault, kConstant, kUniform, kNormal, kXavier, kMSRA };
  Kind kind = Kind::kDefault;  // kDefault: the layer chooses (Fluid's choice)
  double value = 0;            // kConstant
  double low = -1, high = 1;   // kUniform
  double mean = 0, std = 1;    // kNormal
  bool uniform = true;         // kXavier / kMSRA: uniform or normal variant
  int seed = 0;                // 0: the program's random_seed

  static Initializer Constant(double value);
  static Initializer Uniform(double low, double high, int seed = 0);
  static Initializer Normal(double mean, double std, int seed = 0);
  static Initializer Xavier(bool uniform = true, int seed = 0);
  static Initializer MSRA(bool uniform = true, int seed = 0);
};

struct ParamAttr {
  std::string name;  // "" : generated (fc_0.w_0)
  Initializer initializer;
  bool trainable = true;
};

class ProgramBuilder {
 public:
  // Builds into `main` and `startup`, which must outlive the builder.
  ProgramBuilder(Program* main, Program* startup);

  Program& main() { return *main_; }
  Program& startup() { return *startup_; }
  Block& block() { return main_->global_block(); }

  // Seed of random initialisers and dropout whose own seed is 0 (Fluid's
  // Program.random_seed); 0 leaves them to the executor's generator.
  void set_random_seed(int seed) { random_seed_ = seed; }
  int random_seed() const { return random_seed_; }

  // "fc" -> "fc_0", "fc_1", ... (Fluid's unique_name.generate).
  std::string UniqueName(const std::string& key);
  // A temporary "<prefix>.tmp_<k>" in the main program.
  VarDesc* CreateTemporary(const std::string& prefix,
                           DType dtype = DType::kFP32);
  // A parameter: persistable var in both programs, its initialiser op in the
  // startup program. Errors when `name` already names a different var.
  // The var is named attr.name when set, else `name`; attr.initializer wins
  // over `init` unless it is kDefault, and kDefault for both means Xavier
  // (Fluid's default for weights). stop_gradient = !attr.trainable. A second
  // call for an existing parameter of the same dims and dtype returns it
  // (shared weights) without a second initialiser.
  StatusOr<VarDesc*> CreateParameter(const std::string& name, const Dims& dims,
                                     DType dtype, const Initializer& init,
                                     const ParamAttr& attr);
  // A persistable non-parameter var (optimizer state, learning rate, ...)
  // filled with `value` in the startup program; stop_gradient. An existing
  // persistable var of the same dims and dtype is returned as it is.
  StatusOr<VarDesc*> CreatePersistable(const std::string& name,
                                       const Dims& dims, DType dtype,
                                       double value);

  // Appends an op to the main program, infers its output shapes and sets
  // op_role (default Forward). Slots map to var names.
  StatusOr<OpDesc*> AppendOp(
      const std::string& type,
      const std::map<std::string, std::vector<std::string>>& inputs,
      const std::map<std::string, std::vector<std::string>>& outputs,
      int op_role = 0);
  // As above; `set_attrs` sets the op's attributes before shape inference
  // runs (which may read them).
  // Errors: unknown op type (NotFound), an input var not declared in the
  // main program (NotFound), shape inference (InvalidArgument naming the op;
  // the op then stays in the program, which is to be discarded). Output vars
  // missing from the main program are declared (LOD_TENSOR).
  using AttrSetter = std::function<void(OpDesc&)>;
  StatusOr<OpDesc*> AppendOp(
      const std::string& type,
      const std::map<std::string, std::vector<std::string>>& inputs,
      const std::map<std::string, std::vector<std::string>>& outputs,
      const AttrSetter& set_attrs, int op_role = 0);

 private:
  Program* main_;
  Program* startup_;
  int random_seed_ = 0;
  std::map<std::string, int> name_counters_;
};

}  // namespace parex
