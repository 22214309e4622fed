#include "apps/cli/npz.h"

#include <zip.h>

#include <memory>
#include <set>

#include "apps/cli/npy.h"

namespace parex {
namespace {

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct FileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

std::string ZipError(zip_error_t* error) {
  const char* s = zip_error_strerror(error);
  return s != nullptr ? s : "unknown zip error";
}

// Member i's bytes, which must be its stated `size`; `where` names it.
// Read in chunks, so a stated size the data does not back costs nothing.
StatusOr<std::string> ReadMember(zip_t* archive, zip_int64_t i,
                                 zip_uint64_t size, const std::string& where) {
  std::unique_ptr<zip_file_t, FileCloser> file(
      zip_fopen_index(archive, static_cast<zip_uint64_t>(i), 0));
  if (file == nullptr) {
    return InvalidArgument(where + ": " + ZipError(zip_get_error(archive)));
  }
  std::string bytes;
  char chunk[1 << 16];
  while (true) {
    const zip_int64_t n = zip_fread(file.get(), chunk, sizeof(chunk));
    if (n < 0) {
      return InvalidArgument(where + ": " +
                             ZipError(zip_file_get_error(file.get())));
    }
    if (n == 0) break;
    if (bytes.size() + static_cast<uint64_t>(n) > size) {
      return InvalidArgument(where + " holds more than its stated " +
                             std::to_string(size) + " bytes");
    }
    bytes.append(chunk, static_cast<size_t>(n));
  }
  if (bytes.size() != size) {
    return InvalidArgument(where + " holds " + std::to_string(bytes.size()) +
                           " bytes, not its stated " + std::to_string(size));
  }
  return bytes;
}

// Every member of an open archive; `what` names the archive.
StatusOr<NamedArrays> ReadMembers(zip_t* archive, const std::string& what) {
  const zip_int64_t count = zip_get_num_entries(archive, 0);
  if (count < 0) return InvalidArgument(what + ": not a readable zip archive");
  NamedArrays arrays;
  std::set<std::string> names;
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(archive, static_cast<zip_uint64_t>(i), 0, &st) != 0 ||
        (st.valid & ZIP_STAT_NAME) == 0 || (st.valid & ZIP_STAT_SIZE) == 0) {
      return InvalidArgument(what + ": member " + std::to_string(i) + ": " +
                             ZipError(zip_get_error(archive)));
    }
    const std::string member = st.name;
    const std::string where = what + ": member '" + member + "'";
    constexpr char kSuffix[] = ".npy";
    if (member.size() <= 4 ||
        member.compare(member.size() - 4, 4, kSuffix) != 0) {
      return InvalidArgument(where + " is not a .npy array");
    }
    const std::string name = member.substr(0, member.size() - 4);
    if (!names.insert(name).second) {
      return InvalidArgument(where + ": the archive holds '" + name +
                             "' twice");
    }
    if (st.size > kMaxNpzMemberBytes) {
      return InvalidArgument(where + " states " + std::to_string(st.size) +
                             " bytes, more than the " +
                             std::to_string(kMaxNpzMemberBytes) +
                             " parex reads");
    }
    PAREX_ASSIGN_OR_RETURN(std::string bytes,
                           ReadMember(archive, i, st.size, where));
    PAREX_ASSIGN_OR_RETURN(Tensor t, ParseNpy(bytes, where));
    arrays.emplace_back(name, std::move(t));
  }
  if (arrays.empty())
    return InvalidArgument(what + ": the archive holds no arrays");
  return arrays;
}

}  // namespace

StatusOr<NamedArrays> ReadNpz(const std::string& path) {
  int code = 0;
  std::unique_ptr<zip_t, ZipCloser> archive(
      zip_open(path.c_str(), ZIP_RDONLY, &code));
  if (archive == nullptr) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    const std::string message = ZipError(&error);
    zip_error_fini(&error);
    if (code == ZIP_ER_NOENT || code == ZIP_ER_OPEN) {
      return NotFound("'" + path + "': " + message);
    }
    return InvalidArgument("'" + path + "': " + message);
  }
  return ReadMembers(archive.get(), "'" + path + "'");
}

StatusOr<NamedArrays> ParseNpz(const std::string& bytes,
                               const std::string& what) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source =
      zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (source == nullptr) {
    const std::string message = ZipError(&error);
    zip_error_fini(&error);
    return InvalidArgument(what + ": " + message);
  }
  std::unique_ptr<zip_t, ZipCloser> archive(
      zip_open_from_source(source, ZIP_RDONLY, &error));
  if (archive == nullptr) {
    zip_source_free(source);
    const std::string message = ZipError(&error);
    zip_error_fini(&error);
    return InvalidArgument(what + ": " + message);
  }
  zip_error_fini(&error);
  return ReadMembers(archive.get(), what);
}

}  // namespace parex
