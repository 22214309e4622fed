#include "base/place.h"

#include <cstdlib>

namespace parex {

const char* PlaceKindName(Place::Kind kind) {
  return kind == Place::Kind::kCPU ? "cpu" : "cuda";
}

std::string Place::ToString() const {
  return std::string(PlaceKindName(kind)) + ":" + std::to_string(id);
}

StatusOr<Place> ParsePlace(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos) {
    return InvalidArgument("place '" + text + "': expected cpu:N or cuda:N");
  }
  std::string kind = text.substr(0, colon);
  std::string num = text.substr(colon + 1);
  char* end = nullptr;
  long id = std::strtol(num.c_str(), &end, 10);
  if (num.empty() || *end != '\0' || id < 0) {
    return InvalidArgument("place '" + text + "': bad device number");
  }
  if (kind == "cpu") return Place::CPU(static_cast<int>(id));
  if (kind == "cuda" || kind == "gpu") return Place::CUDA(static_cast<int>(id));
  return InvalidArgument("place '" + text + "': unknown kind '" + kind + "'");
}

}  // namespace parex
