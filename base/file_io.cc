#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

namespace parex {
namespace {

namespace fs = std::filesystem;

std::string Errno() { return std::strerror(errno); }

// The directory a file `path` lives in ("." for a bare name).
std::string DirOf(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

const char* KindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// OK when `path` is absent or a regular file (not followed through links).
Status CheckReplaceable(const std::string& path, const std::string& what) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return IoError(what + "'" + path + "': " + Errno());
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument(what + "'" + path + "' is " + KindOf(st.st_mode) +
                           "; parex writes only over regular files");
  }
  return Status::Ok();
}

Status CheckWritableDir(const std::string& dir, const std::string& what,
                        const std::string& path) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return NotFound(what + "'" + path + "': directory '" + dir +
                    "' does not exist");
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument(what + "'" + path + "': '" + dir +
                           "' is not a directory");
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return IoError(what + "'" + path + "': directory '" + dir +
                   "' is not writable: " + Errno());
  }
  return Status::Ok();
}

}  // namespace

namespace {

StatusOr<std::string> ReadRegularFile(const std::string& path,
                                      bool private_file) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return NotFound("cannot open '" + path + "': " + Errno());
    return IoError("cannot open '" + path + "': " + Errno());
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const std::string why = Errno();
    close(fd);
    return IoError("cannot stat '" + path + "': " + why);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArgument("'" + path + "' is " + KindOf(st.st_mode) +
                           ", not a regular file");
  }
  if (private_file && (st.st_mode & 077) != 0) {
    close(fd);
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o",
                  static_cast<unsigned>(st.st_mode & 07777));
    return FailedPrecondition(
        "'" + path + "' is a secret but its mode " + mode +
        " lets others read or write it (run: chmod 600 '" + path + "')");
  }
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(st.st_size));
  } catch (const std::exception&) {
    close(fd);
    return ResourceExhausted("'" + path + "' (" + std::to_string(st.st_size) +
                             " bytes) does not fit in memory");
  }
  size_t got = 0;
  while (true) {
    if (got == bytes.size()) bytes.resize(bytes.size() + 65536);  // it grew
    const ssize_t n = read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = Errno();
      close(fd);
      return IoError("cannot read '" + path + "': " + why);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  bytes.resize(got);
  return bytes;
}

Status WriteBytes(const std::string& path, const std::string& bytes,
                  bool private_file) {
  PAREX_RETURN_IF_ERROR(CheckReplaceable(path, ""));
  std::string tmp = path + ".tmp.XXXXXX";
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) {
    return IoError("cannot create a temporary file beside '" + path +
                   "': " + Errno());
  }
  tmp = name.data();
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = Errno();
      close(fd);
      unlink(tmp.c_str());
      return IoError("cannot write '" + path + "': " + why);
    }
    done += static_cast<size_t>(n);
  }
  // mkstemp makes 0600, which a secret keeps; outputs get the usual 0644
  // less the umask.
  if (!private_file) {
    const mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
  }
  if (close(fd) != 0) {
    const std::string why = Errno();
    unlink(tmp.c_str());
    return IoError("cannot write '" + path + "': " + why);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = Errno();
    unlink(tmp.c_str());
    return IoError("cannot rename '" + tmp + "' to '" + path + "': " + why);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> ReadFileBytes(const std::string& path) {
  return ReadRegularFile(path, /*private_file=*/false);
}

StatusOr<std::string> ReadPrivateFileBytes(const std::string& path) {
  return ReadRegularFile(path, /*private_file=*/true);
}

Status WriteFileBytes(const std::string& path, const std::string& bytes) {
  return WriteBytes(path, bytes, /*private_file=*/false);
}

Status WritePrivateFileBytes(const std::string& path,
                             const std::string& bytes) {
  return WriteBytes(path, bytes, /*private_file=*/true);
}

Status CheckOutputFile(const std::string& path, const std::string& flag) {
  const std::string what = flag.empty() ? "" : flag + " ";
  if (path.empty()) return InvalidArgument(what + "needs a file name");
  PAREX_RETURN_IF_ERROR(CheckReplaceable(path, what));
  return CheckWritableDir(DirOf(path), what, path);
}

Status CheckOutputDir(const std::string& path, const std::string& flag) {
  const std::string what = flag.empty() ? "" : flag + " ";
  if (path.empty()) return InvalidArgument(what + "needs a directory name");
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode) && stat(path.c_str(), &st) != 0) {
      return InvalidArgument(what + "'" + path +
                             "' is a dangling symbolic link");
    }
    if (!S_ISDIR(st.st_mode)) {
      return InvalidArgument(what + "'" + path +
                             "' exists and is not a directory");
    }
    return CheckWritableDir(path, what, path);
  }
  // Absent: the nearest existing ancestor must let us create it.
  fs::path p = fs::path(path).lexically_normal();
  while (true) {
    fs::path parent = p.parent_path();
    const std::string dir = parent.empty() ? "." : parent.string();
    if (stat(dir.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        return InvalidArgument(what + "'" + path + "': '" + dir +
                               "' is not a directory");
      }
      return CheckWritableDir(dir, what, path);
    }
    if (parent.empty() || parent == p) break;
    p = parent;
  }
  return NotFound(what + "'" + path + "': no existing parent directory");
}

}  // namespace parex
