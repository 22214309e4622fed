// Where a process's GPU time goes, for the lent GPU machine, which has no
// Nsight Systems: a library loaded with LD_PRELOAD that records every kernel,
// memcpy and memset through CUPTI's activity API and, when the process exits,
// prints one table (by kernel name: count, total and mean device time, share)
// to stderr or to $PAREX_KERNEL_PROFILE_OUT. Kernels replayed from a CUDA
// graph are recorded like the others. Works on any CUDA program (parex,
// PyTorch), so the two can be compared kernel by kernel:
//   LD_PRELOAD=libparex_kernel_profile.so parex train --places cuda:0 ...
// $PAREX_KERNEL_PROFILE_ROWS: rows printed (default 40).
// Written by hand: CUPTI is the library; this is the 100 lines that turn its
// records into a table.
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Totals {
  int64_t count = 0;
  uint64_t ns = 0;
  uint64_t bytes = 0;
};

std::mutex mu;
std::map<std::string, Totals>* totals = nullptr;  // leaked: used at exit
constexpr size_t kBufferBytes = 8 << 20;

std::string Demangled(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = (status == 0 && d != nullptr) ? d : name;
  std::free(d);
  if (s.size() > 110) s = s.substr(0, 107) + "...";
  return s;
}

void Add(const std::string& key, uint64_t start, uint64_t end, uint64_t bytes) {
  Totals& t = (*totals)[key];
  ++t.count;
  t.ns += end > start ? end - start : 0;
  t.bytes += bytes;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size,
                              size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

const char* CopyKind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    default:
      return "other";
  }
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t,
                              size_t valid) {
  std::lock_guard<std::mutex> lock(mu);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
      Add(Demangled(k->name), k->start, k->end, 0);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(record);
      Add(std::string("[memcpy ") + CopyKind(m->copyKind) + "]", m->start,
          m->end, m->bytes);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(record);
      Add("[memset]", m->start, m->end, m->bytes);
    }
  }
  std::free(buffer);
}

void Report() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(mu);
  std::vector<std::pair<std::string, Totals>> rows(totals->begin(),
                                                   totals->end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.ns > b.second.ns;
  });
  uint64_t all = 0;
  int64_t launches = 0;
  for (const auto& r : rows) {
    all += r.second.ns;
    launches += r.second.count;
  }
  const char* path = std::getenv("PAREX_KERNEL_PROFILE_OUT");
  FILE* out = path != nullptr ? std::fopen(path, "a") : stderr;
  if (out == nullptr) out = stderr;
  const char* rows_env = std::getenv("PAREX_KERNEL_PROFILE_ROWS");
  const size_t shown = rows_env != nullptr ? std::atoi(rows_env) : 40;
  std::fprintf(out,
               "kernel_profile: %lld device activities, %.3f ms of device "
               "time\n%8s %11s %9s %6s  %s\n",
               static_cast<long long>(launches), all / 1e6, "count", "total_us",
               "mean_us", "share", "name");
  for (size_t i = 0; i < rows.size() && i < shown; ++i) {
    const Totals& t = rows[i].second;
    std::fprintf(out, "%8lld %11.1f %9.2f %5.1f%%  %s\n",
                 static_cast<long long>(t.count), t.ns / 1e3,
                 t.ns / 1e3 / std::max<int64_t>(t.count, 1),
                 all ? 100.0 * t.ns / all : 0.0, rows[i].first.c_str());
  }
  if (out != stderr) std::fclose(out);
}

__attribute__((constructor)) void Start() {
  totals = new std::map<std::string, Totals>();
  if (cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted) !=
      CUPTI_SUCCESS) {
    std::fprintf(stderr, "kernel_profile: CUPTI refused its callbacks\n");
    return;
  }
  for (CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET}) {
    if (cuptiActivityEnable(kind) != CUPTI_SUCCESS) {
      std::fprintf(stderr, "kernel_profile: CUPTI activity %d not enabled\n",
                   static_cast<int>(kind));
    }
  }
  std::atexit(Report);
}

}  // namespace
