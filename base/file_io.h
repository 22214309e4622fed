// Whole-file reads and atomic writes, the only way parex touches files.
//
// Reads open regular files only (a FIFO, device or directory named as an
// input is an error, never a blocking read). Writes go to a fresh temporary
// file beside the target (mkstemp, so an existing `*.tmp` symlink is never
// followed) and are renamed over it; they replace only a regular file, never
// a symlink, FIFO, device or directory. A failed write leaves the target as
// it was. Errors name the path and the OS's reason.
#pragma once

#include <string>

#include "base/status.h"

namespace parex {

StatusOr<std::string> ReadFileBytes(const std::string& path);
// A secret (the cluster's shared secret, a TLS private key): as
// ReadFileBytes, but refused when the group or others may read or write it
// (mode & 077), naming the mode and the chmod that fixes it.
StatusOr<std::string> ReadPrivateFileBytes(const std::string& path);
Status WriteFileBytes(const std::string& path, const std::string& bytes);
// The same, written with mode 0600 whatever the umask (a secret).
Status WritePrivateFileBytes(const std::string& path, const std::string& bytes);

// Before any work: can `path` be written as an output file? It must be absent
// or a regular file, and its directory must exist and be writable. `flag`
// names the option in errors ("--trace").
Status CheckOutputFile(const std::string& path, const std::string& flag);
// The same for an output directory: absent (its nearest existing ancestor
// writable, so it can be created) or a writable directory.
Status CheckOutputDir(const std::string& path, const std::string& flag);

}  // namespace parex
