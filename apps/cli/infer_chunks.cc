#include "apps/cli/infer_chunks.h"

#include <algorithm>
#include <utility>

#include "actors/executor/op_handle_tasks.h"

namespace parex::cli {

int64_t ChunkRows(int64_t rows, int places, int64_t chunk_rows) {
  const int64_t n = std::max(places, 1);
  if (chunk_rows <= 0 || rows <= chunk_rows * n) return rows;
  for (int64_t per_place = chunk_rows; 2 * per_place >= chunk_rows;
       --per_place) {
    if (rows % (per_place * n) == 0) return per_place * n;
  }
  return rows;
}

bool ChunkedRunner::Splittable(const FeedMap& feed, int64_t rows) {
  for (const auto& [name, t] : feed) {
    if (t.rank() == 0) continue;
    if (t.dim(0) != rows || !t.lod().empty()) return false;
  }
  return true;
}

StatusOr<std::vector<Tensor>> ChunkedRunner::Run(
    ParallelExecutor& pe, const FeedMap& feed,
    const std::vector<std::string>& fetches) {
  int64_t rows = 0;
  for (const auto& [name, t] : feed) {
    if (t.rank() > 0) rows = t.dim(0);
  }
  chunked_ = false;
  if (whole_only_ || chunk_ <= 0 || rows <= chunk_ || rows % chunk_ != 0 ||
      !Splittable(feed, rows)) {
    return pe.Run(feed, fetches);
  }
  // parts[i][k]: fetch i of chunk k.
  std::vector<std::vector<Tensor>> parts(fetches.size());
  FeedMap part;
  for (int64_t begin = 0; begin < rows; begin += chunk_) {
    for (const auto& [name, t] : feed) {
      part[name] = t.rank() == 0 ? t : t.Slice(begin, begin + chunk_);
    }
    PAREX_ASSIGN_OR_RETURN(std::vector<Tensor> out, pe.Run(part, fetches));
    for (size_t i = 0; i < out.size() && i < parts.size(); ++i) {
      const Tensor& t = out[i];
      if (!t.defined() || t.rank() < 1 || t.dim(0) != chunk_ ||
          !t.lod().empty() || !t.place().is_cpu()) {
        // Not rows of the batch: the program mixes rows (or fetches a
        // summary), so it runs whole from now on.
        whole_only_ = true;
        return pe.Run(feed, fetches);
      }
      parts[i].push_back(std::move(out[i]));
    }
  }
  std::vector<Tensor> merged;
  for (const std::vector<Tensor>& p : parts) {
    PAREX_ASSIGN_OR_RETURN(Tensor t, ConcatAlongDim0(p));
    merged.push_back(std::move(t));
  }
  chunked_ = true;
  return merged;
}

}  // namespace parex::cli
