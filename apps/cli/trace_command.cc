// parex trace merge: the traces of a cluster's nodes as one timeline
// (actors/trace_merge.h).
#include <cstdio>

#include "actors/trace_merge.h"
#include "apps/cli/cli.h"
#include "base/file_io.h"

namespace parex::cli {

int RunTraceMerge(const TraceMergeOptions& options) {
  const std::string cmd = "trace merge";
  std::vector<NodeTrace> traces;
  for (const std::string& path : options.inputs) {
    StatusOr<std::string> bytes = ReadFileBytes(path);
    if (!bytes.ok()) return Fail(cmd, bytes.status());
    traces.push_back({path, std::move(*bytes)});
  }
  StatusOr<std::string> merged = MergeNodeTraces(traces);
  if (!merged.ok()) return Fail(cmd, merged.status());
  if (Status s = WriteFileBytes(options.output, *merged); !s.ok()) {
    return Fail(cmd, s.WithContext("-o"));
  }
  std::printf("merged %zu node traces into %s\n", traces.size(), options.output.c_str());
  return kExitOk;
}

}  // namespace parex::cli
