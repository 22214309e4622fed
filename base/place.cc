#include "base/place.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace parex {

const char* PlaceKindName(Place::Kind kind) {
  switch (kind) {
    case Place::Kind::kCPU:
      return "cpu";
    case Place::Kind::kCUDA:
      return "cuda";
    case Place::Kind::kSim:
      return "sim";
  }
  return "?";
}

std::string Place::ToString() const {
  return std::string(PlaceKindName(kind)) + ":" + std::to_string(id);
}

StatusOr<Place> ParsePlace(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos) {
    return InvalidArgument("place '" + text +
                           "': expected cpu:N, cuda:N or sim:N");
  }
  std::string kind = text.substr(0, colon);
  std::string num = text.substr(colon + 1);
  char* end = nullptr;
  long id = std::strtol(num.c_str(), &end, 10);
  if (num.empty() || *end != '\0' || id < 0 || id > kMaxPlaceId) {
    return InvalidArgument("place '" + text + "': bad device number");
  }
  if (kind == "cpu") return Place::CPU(static_cast<int>(id));
  if (kind == "cuda" || kind == "gpu") return Place::CUDA(static_cast<int>(id));
  if (kind == "sim") return Place::Sim(static_cast<int>(id));
  return InvalidArgument("place '" + text + "': unknown kind '" + kind + "'");
}

StatusOr<std::vector<Place>> ParsePlaceList(const std::string& spec) {
  const std::string bad =
      "'" + spec +
      "': expected cpu:N (N places), cpu:0,1,..., cpu:0-3 or "
      "cpu (one place); cuda and sim likewise";
  const size_t colon = spec.find(':');
  const std::string kind_text = spec.substr(0, colon);
  Place::Kind kind;
  if (kind_text == "cpu") {
    kind = Place::Kind::kCPU;
  } else if (kind_text == "cuda" || kind_text == "gpu") {
    kind = Place::Kind::kCUDA;
  } else if (kind_text == "sim") {
    kind = Place::Kind::kSim;
  } else {
    return InvalidArgument(bad);
  }
  if (colon == std::string::npos) return std::vector<Place>{Place{kind, 0}};
  const std::string rest = spec.substr(colon + 1);
  if (rest.empty()) return InvalidArgument(bad);
  // Items are ids or inclusive ranges "a-b"; a single plain number is a count.
  std::vector<long> ids;
  bool ranged = false;
  size_t at = 0;
  while (at <= rest.size()) {
    const size_t comma = std::min(rest.find(',', at), rest.size());
    const std::string item = rest.substr(at, comma - at);
    const size_t dash = item.find('-');
    const std::string first = item.substr(0, dash);
    char* end = nullptr;
    const long v = std::strtol(first.c_str(), &end, 10);
    if (first.empty() || *end != '\0' || v < 0 || v > kMaxPlaceId ||
        !std::isdigit(static_cast<unsigned char>(first[0]))) {
      return InvalidArgument(bad);
    }
    if (dash == std::string::npos) {
      ids.push_back(v);
    } else {
      const std::string last = item.substr(dash + 1);
      const long w = std::strtol(last.c_str(), &end, 10);
      if (last.empty() || *end != '\0' || w > kMaxPlaceId ||
          !std::isdigit(static_cast<unsigned char>(last[0]))) {
        return InvalidArgument(bad);
      }
      if (w < v) return InvalidArgument(bad + " (range " + item + " is empty)");
      for (long i = v; i <= w; ++i) ids.push_back(i);
      ranged = true;
    }
    at = comma + 1;
  }
  std::vector<Place> places;
  if (rest.find(',') == std::string::npos && !ranged) {
    if (ids[0] < 1) return InvalidArgument(bad + " (N must be at least 1)");
    for (long i = 0; i < ids[0]; ++i)
      places.push_back(Place{kind, static_cast<int>(i)});
    return places;
  }
  for (long id : ids) {
    for (const Place& p : places) {
      if (p.id == id) {
        return InvalidArgument(bad + " (place " + std::to_string(id) +
                               " twice)");
      }
    }
    places.push_back(Place{kind, static_cast<int>(id)});
  }
  return places;
}

}  // namespace parex
