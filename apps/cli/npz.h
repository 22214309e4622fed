// NumPy .npz archives (numpy.savez and savez_compressed): a zip of .npy
// files, one array per member, NAME.npy naming it NAME. Read through libzip
// (stored and deflated members); each member is parsed by ParseNpy.
//
// Hostile archives: a member's stated size above kMaxNpzMemberBytes, a
// member that inflates past its stated size, a name without ".npy", two
// members of one name, or a broken zip are refused with an error naming the
// file and member; nothing is allocated for a size the data does not back.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "kernels/tensor.h"

namespace parex {

inline constexpr uint64_t kMaxNpzMemberBytes = uint64_t{1} << 36;  // 64 GiB

using NamedArrays = std::vector<std::pair<std::string, Tensor>>;

// The arrays of the archive at `path`, in member order.
StatusOr<NamedArrays> ReadNpz(const std::string& path);
// The same from the archive's bytes; `what` names it in errors.
StatusOr<NamedArrays> ParseNpz(const std::string& bytes,
                               const std::string& what);

}  // namespace parex
