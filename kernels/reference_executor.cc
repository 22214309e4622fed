#include "kernels/reference_executor.h"

#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "graph/ir/validate.h"
#include "kernels/op_runner.h"

namespace parex {

namespace {

// Every variable of the block: persistables in `scope`, the rest (tensor
// arrays empty) in `local`.
void DeclareVars(const Block& block, Scope* scope, Scope* local) {
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
}

// Where the fetch ops put each fetched variable: its column of `holder`.
struct FetchColumns {
  std::map<std::string, int> column;  // var name -> fetch col
  std::string holder;
};

// The feeds into `local`: feed ops read columns of their holder variable;
// other fed names are set directly and must be variables of the program. A
// fed variable the program writes gets a copy (the caller's tensor stays as
// it was). Also where the fetch ops put their values.
StatusOr<FetchColumns> Feed(const Program& program, const FeedMap& feeds,
                            Scope* local) {
  const Block& block = program.global_block();
  const std::unordered_set<std::string> written = VarsWrittenByOps(program);
  auto value_of = [&](const std::string& name, const Tensor& value) {
    return written.count(name) > 0 ? value.Clone() : value;
  };
  std::set<std::string> consumed;
  FetchColumns fetches;
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
      (*list)[col] = value_of(target, it->second);
      consumed.insert(target);
    } else if (op->type() == "fetch") {
      PAREX_ASSIGN_OR_RETURN(int col, op->GetAttr<int>("col"));
      fetches.column[op->FirstInput("X")] = col;
      fetches.holder = op->FirstOutput("Out");
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
    *local->FindVar(name)->GetMutableTensor() = value_of(name, value);
  }
  return fetches;
}

// Each fetch target's value: its fetch op's column, else the variable's
// tensor (copied: the local scope goes after the run).
StatusOr<std::vector<Tensor>> Fetched(const FetchColumns& fetches,
                                      const std::vector<std::string>& names,
                                      const Scope& local) {
  std::vector<Tensor> results;
  for (const std::string& name : names) {
    auto col = fetches.column.find(name);
    if (col != fetches.column.end()) {
      const auto* list = local.FindVar(fetches.holder)->GetTensorList();
      if (list != nullptr && col->second < static_cast<int>(list->size())) {
        results.push_back((*list)[col->second]);
        continue;
      }
    }
    const Variable* v = local.FindVar(name);
    if (v == nullptr || v->GetTensor() == nullptr ||
        !v->GetTensor()->defined()) {
      return NotFound("fetch target '" + name +
                      "' holds no value after the run");
    }
    results.push_back(v->GetTensor()->Clone());
  }
  return results;
}

}  // namespace

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
  DeclareVars(block, scope, local);
  PAREX_ASSIGN_OR_RETURN(FetchColumns fetches, Feed(program, feeds, local));
  for (const auto& op : block.ops()) {
    PAREX_RETURN_IF_ERROR(RunOp(*op, local, &device_context_));
  }
  return Fetched(fetches, fetch_names, *local);
}

}  // namespace parex
