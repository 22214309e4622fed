#include "apps/cuda_loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "kernels/visible_devices.h"

namespace parex {
namespace {

constexpr const char* kModule = "libparex_cuda.so";
constexpr const char* kEntry = "parex_cuda_register";

std::string LoadCuda() {
  std::error_code ec;
  const std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string tried;
  void* handle = nullptr;
  if (!ec) {
    const std::string beside = (self.parent_path() / kModule).string();
    handle = dlopen(beside.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) tried = dlerror();
  }
  if (handle == nullptr) {
    handle = dlopen(kModule, RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      return (tried.empty() ? "" : tried + "; ") +
             (error != nullptr ? error : kModule);
    }
  }
  auto entry = reinterpret_cast<void (*)()>(dlsym(handle, kEntry));
  if (entry == nullptr) {
    return std::string(kModule) + " has no " + kEntry;
  }
  entry();
  return "";
}

}  // namespace

void InstallCudaLoader() { SetCudaLoader(&LoadCuda); }

}  // namespace parex
