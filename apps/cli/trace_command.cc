// parex trace merge: the traces of a cluster's nodes as one timeline
// (actors/trace/trace_merge.h); parex secret: a cluster's shared secret.
#include <sys/stat.h>

#include <cstdio>

#include "actors/trace/trace_merge.h"
#include "apps/cli/cli.h"
#include "base/digest.h"
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
  std::printf("merged %zu node traces into %s\n", traces.size(),
              options.output.c_str());
  return kExitOk;
}

int RunSecret(const std::string& path, bool force) {
  const std::string cmd = "secret";
  struct stat st;
  if (!force && lstat(path.c_str(), &st) == 0) {
    return Fail(
        cmd,
        FailedPrecondition("'" + path +
                           "' exists; a new secret would lock its cluster's "
                           "nodes out until each has it (--force replaces it)"),
        kExitUsage);
  }
  if (Status s = CheckOutputFile(path, ""); !s.ok())
    return Fail(cmd, s, kExitUsage);
  StatusOr<std::string> bytes = RandomBytes(32);
  if (!bytes.ok()) return Fail(cmd, bytes.status());
  static const char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned char c : *bytes) {
    text += kHex[c >> 4];
    text += kHex[c & 15];
  }
  text += "\n";
  if (Status s = WritePrivateFileBytes(path, text); !s.ok())
    return Fail(cmd, s);
  std::printf(
      "wrote a new cluster secret to %s (mode 0600): copy it to every node, "
      "privately\n",
      path.c_str());
  return kExitOk;
}

}  // namespace parex::cli
