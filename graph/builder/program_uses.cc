#include "graph/builder/program_uses.h"

namespace parex {
namespace fusion {

bool IsConv(const OpDesc& op) {
  return op.type() == "conv2d" || op.type() == "depthwise_conv2d";
}

Uses CountUses(const Program& program) {
  Uses uses;
  for (int b = 0; b < program.num_blocks(); ++b) {
    for (const auto& op : program.block(b).ops()) {
      for (const std::string& name : op->InputArgumentNames()) {
        ++uses.readers[name];
      }
      for (const std::string& name : op->OutputArgumentNames()) {
        ++uses.writers[name];
      }
    }
  }
  return uses;
}

int Count(const std::map<std::string, int>& m, const std::string& name) {
  auto it = m.find(name);
  return it == m.end() ? 0 : it->second;
}

}  // namespace fusion
}  // namespace parex
