#include "kernels/reference_executor.h"

#include <set>
#include <unordered_set>

#include "graph/ir/validate.h"
#include "kernels/op_runner.h"

namespace parex {

StatusOr<std::vector<Tensor>> ReferenceExecutor::Run(
    const Program& program, Scope* scope, const FeedMap& feeds,
    const std::vector<std::string>& fetch_names) {
  PAREX_RETURN_IF_ERROR(ValidateProgram(program));
  const Block& block = program.global_block();
  Scope* local = scope->NewScope();
  // Temporaries go with the local scope whatever happens below (and only
  // it: other kids of `scope`, such as a ParallelExecutor's, stay).
  struct DeleteLocal {
    Scope* scope;
    Scope* local;
    ~DeleteLocal() { scope->DeleteScope(local); }
  } drop{scope, local};

  for (const auto& var : block.vars()) {
    if (var->persistable() && var->type() != proto::VarType::FEED_MINIBATCH &&
        var->type() != proto::VarType::FETCH_LIST) {
      scope->Var(var->name());
    } else if (var->type() == proto::VarType::LOD_TENSOR_ARRAY) {
      local->Var(var->name())->GetMutableTensorList();  // starts empty
    } else {
      local->Var(var->name());
    }
  }

  // Feed ops read columns of their holder variable; a fed variable the
  // program writes gets a copy (the caller's tensor stays as it was).
  const std::unordered_set<std::string> written = VarsWrittenByOps(program);
  std::set<std::string> consumed;
  std::map<std::string, int> fetch_columns;  // var name -> fetch col
  std::string fetch_holder;
  for (const auto& op : block.ops()) {
    if (op->type() == "feed") {
      std::string target = op->FirstOutput("Out");
      auto it = feeds.find(target);
      if (it == feeds.end()) {
        return InvalidArgument("missing feed '" + target + "' (read by " +
                               op->Label() + ")");
      }
      if (const VarDesc* var = block.FindVar(target)) {
        PAREX_RETURN_IF_ERROR(CheckFeed(*var, it->second));
      }
      PAREX_ASSIGN_OR_RETURN(int col, op->GetAttr<int>("col"));
      auto* list = local->Var(op->FirstInput("X"))->GetMutableTensorList();
      if (static_cast<int>(list->size()) <= col) list->resize(col + 1);
      (*list)[col] =
          written.count(target) > 0 ? it->second.Clone() : it->second;
      consumed.insert(target);
    } else if (op->type() == "fetch") {
      PAREX_ASSIGN_OR_RETURN(int col, op->GetAttr<int>("col"));
      fetch_columns[op->FirstInput("X")] = col;
      fetch_holder = op->FirstOutput("Out");
    }
  }
  for (const auto& [name, value] : feeds) {
    if (consumed.count(name)) continue;
    const VarDesc* var = block.FindVar(name);
    if (var == nullptr) {
      return InvalidArgument("feed '" + name +
                             "' names no variable of the program");
    }
    PAREX_RETURN_IF_ERROR(CheckFeed(*var, value));
    Tensor* fed = local->FindVar(name)->GetMutableTensor();
    if (written.count(name) > 0) {
      *fed = value.Clone();
    } else {
      *fed = value;
    }
  }

  for (const auto& op : block.ops()) {
    PAREX_RETURN_IF_ERROR(RunOp(*op, local, &device_context_));
  }

  std::vector<Tensor> results;
  for (const std::string& name : fetch_names) {
    auto col = fetch_columns.find(name);
    if (col != fetch_columns.end()) {
      const auto* list = local->FindVar(fetch_holder)->GetTensorList();
      if (list != nullptr && col->second < static_cast<int>(list->size())) {
        results.push_back((*list)[col->second]);
        continue;
      }
    }
    const Variable* v = local->FindVar(name);
    if (v == nullptr || v->GetTensor() == nullptr ||
        !v->GetTensor()->defined()) {
      return NotFound("fetch target '" + name +
                      "' holds no value after the run");
    }
    results.push_back(v->GetTensor()->Clone());
  }
  return results;
}

}  // namespace parex
