#include "base/config.h"

#include <cstdlib>
#include <cstring>

#include "base/check.h"

namespace parex {

const std::vector<ConfigVar>& ConfigVars() {
  static const std::vector<ConfigVar> vars = {
      {"CPU_NUM", "1", "number of CPU places of an executor given no places"},
      {"CUDA_VISIBLE_DEVICES", "", "CUDA devices parex may use"},
      {"PAREX_NCCL_TIMEOUT_MS", "300000",
       "how long a step waits for NCCL collectives on GPUs before it aborts "
       "them and fails naming the place"},
      {"PAREX_CUBLAS_WORKSPACE_MB", "-1",
       "each CUDA stream's own cuBLAS workspace in MiB (-1: cuBLAS's "
       "recommended size for the GPU, 32 from Hopper on, else 4; 0: cuBLAS's "
       "shared default pool, whose GEMMs may pick other algorithms run to "
       "run)"},
      {"PAREX_CUDA_GRAPH_DOT", "",
       "a path prefix: each captured CUDA graph is written as "
       "<prefix>.<n>.dot (cudaGraphDebugDotPrint, verbose) for debugging"},
      {"PAREX_SEED", "0",
       "seed of the generator that random ops with seed=0 draw from"},
      {"PAREX_MAX_MEMORY_BYTES", "0",
       "most bytes one place's allocator hands out at once (0: the "
       "machine's physical memory); larger requests fail the step"},
      {"PAREX_LOG_LEVEL", "warn",
       "spdlog level: trace, debug, info, warn, error, off"},
      {"PAREX_MAX_LOOP_ITERATIONS", "100000",
       "most iterations one run of a `while` op may take before it fails "
       "naming the op (a condition that never turns false)"},
      {"PAREX_DNNL_CONV", "",
       "fp32 conv2d through oneDNN: 1 always, 0 never, unset where it is "
       "faster"},
      // Set by mpirun (OpenMPI's, else a PMI launcher's): which node of a
      // topology of collective MPI a process is
      // (actors/comm/mpi_communicator.h).
      {"OMPI_COMM_WORLD_RANK", "",
       "this process's rank, from OpenMPI's mpirun"},
      {"OMPI_COMM_WORLD_SIZE", "", "the processes OpenMPI's mpirun started"},
      {"OMPI_COMM_WORLD_LOCAL_SIZE", "",
       "of them, those on this machine (OpenMPI's mpirun)"},
      {"PMI_RANK", "", "this process's rank, from a PMI launcher (MPICH's)"},
      {"PMI_SIZE", "", "the processes a PMI launcher started"},
      {"MPI_LOCALNRANKS", "", "of them, those on this machine (MPICH's)"},
  };
  return vars;
}

static const ConfigVar& Find(const char* name) {
  for (const auto& v : ConfigVars()) {
    if (std::strcmp(v.name, name) == 0) return v;
  }
  PAREX_CHECK(false, std::string("undeclared config variable ") + name);
  std::abort();
}

std::string GetConfig(const char* name) {
  const ConfigVar& var = Find(name);
  const char* value = std::getenv(var.name);
  return value != nullptr ? std::string(value) : std::string(var.default_value);
}

bool ConfigIsSet(const char* name) {
  return std::getenv(Find(name).name) != nullptr;
}

long GetConfigInt(const char* name) {
  std::string value = GetConfig(name);
  char* end = nullptr;
  long parsed = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0') {
    return std::strtol(Find(name).default_value, nullptr, 10);
  }
  return parsed;
}

}  // namespace parex
