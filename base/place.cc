#include "base/place.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace parex {
namespace {

// `text` as a number in 0..max, written in decimal digits only (no sign, no
// space); false otherwise.
bool ParseNumber(const std::string& text, long max, long* out) {
  if (text.empty() || text.size() > 10) return false;
  long value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  if (value > max) return false;
  *out = value;
  return true;
}

bool ParseKind(const std::string& text, Place::Kind* kind) {
  if (text == "cpu") {
    *kind = Place::Kind::kCPU;
  } else if (text == "cuda" || text == "gpu") {
    *kind = Place::Kind::kCUDA;
  } else if (text == "sim") {
    *kind = Place::Kind::kSim;
  } else {
    return false;
  }
  return true;
}

// The usage line of a place list of `kind`, quoting `spec`.
std::string BadList(const std::string& spec, Place::Kind kind) {
  if (kind == Place::Kind::kCUDA) {
    return "'" + spec +
           "': expected cuda:D (device D), cuda:0,2, cuda:0-3, cuda:all "
           "(every visible device) or cuda (device 0), each device "
           "optionally xK (K places on it: cuda:0x2)";
  }
  const std::string k = PlaceKindName(kind);
  return "'" + spec + "': expected " + k + ":N (N places), " + k +
         ":0,1,..., " + k + ":0-3" +
         (kind == Place::Kind::kCPU ? ", cpu:all" : "") + " or " + k +
         " (one place)";
}

// One item of a list, "a", "a-b" or "all", without its "xK": the devices it
// names appended to `ids`.
Status ParseItem(const std::string& spec, Place::Kind kind,
                 const std::string& item, const PlaceCounts& counts,
                 std::vector<long>* ids) {
  const std::string bad = BadList(spec, kind);
  if (item == "all") {
    const int count = kind == Place::Kind::kCPU    ? counts.cpu
                      : kind == Place::Kind::kCUDA ? counts.cuda
                                                   : -1;
    if (kind == Place::Kind::kSim) {
      return InvalidArgument("'" + spec +
                             "': sim places have no device count for 'all'; "
                             "write sim:N");
    }
    if (count < 0) {
      return InvalidArgument("'" + spec + "': the number of " +
                             PlaceKindName(kind) +
                             " devices is not known here; name them (" +
                             PlaceKindName(kind) + ":0-3)");
    }
    if (count == 0) {
      return FailedPrecondition("'" + spec + "': no " +
                                std::string(PlaceKindName(kind)) +
                                " device is visible");
    }
    if (count > kMaxPlaceId + 1) {
      return InvalidArgument("'" + spec + "': " + std::to_string(count) +
                             " devices, more than the " +
                             std::to_string(kMaxPlaceId + 1) +
                             " places a list may hold");
    }
    for (long i = 0; i < count; ++i) ids->push_back(i);
    return Status::Ok();
  }
  const size_t dash = item.find('-');
  long first = 0;
  if (!ParseNumber(item.substr(0, dash), kMaxPlaceId, &first)) {
    return InvalidArgument(bad);
  }
  if (dash == std::string::npos) {
    ids->push_back(first);
    return Status::Ok();
  }
  long last = 0;
  if (!ParseNumber(item.substr(dash + 1), kMaxPlaceId, &last)) {
    return InvalidArgument(bad);
  }
  if (last < first) {
    return InvalidArgument(bad + " (range " + item + " is empty)");
  }
  for (long i = first; i <= last; ++i) ids->push_back(i);
  return Status::Ok();
}

}  // namespace

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

const char* PlaceKindTitle(Place::Kind kind) {
  switch (kind) {
    case Place::Kind::kCPU:
      return "CPU";
    case Place::Kind::kCUDA:
      return "CUDA";
    case Place::Kind::kSim:
      return "simulated";
  }
  return "?";
}

std::string Place::ToString() const {
  std::string text =
      std::string(PlaceKindName(kind)) + ":" + std::to_string(id);
  if (slot != 0) text += "." + std::to_string(slot);
  return text;
}

StatusOr<Place> ParsePlace(const std::string& text) {
  const size_t colon = text.find(':');
  Place place;
  if (colon == std::string::npos ||
      !ParseKind(text.substr(0, colon), &place.kind)) {
    return InvalidArgument("place '" + text +
                           "': expected cpu:N, cuda:N, cuda:N.S (slot S of "
                           "device N) or sim:N");
  }
  const std::string number = text.substr(colon + 1);
  const size_t dot = number.find('.');
  long id = 0;
  long slot = 0;
  if (!ParseNumber(number.substr(0, dot), kMaxPlaceId, &id) ||
      (dot != std::string::npos &&
       !ParseNumber(number.substr(dot + 1), kMaxPlacesPerDevice - 1, &slot))) {
    return InvalidArgument("place '" + text + "': bad device number");
  }
  place.id = static_cast<int>(id);
  place.slot = static_cast<int>(slot);
  return place;
}

namespace {

// One item's "xK" (K places on one device; cuda only), cut off `item`.
Status CutPerDevice(Place::Kind kind, const std::string& bad, std::string* item,
                    long* per_device) {
  *per_device = 1;
  const size_t x = item->find('x');
  if (x == std::string::npos) return Status::Ok();
  if (kind != Place::Kind::kCUDA) {
    return InvalidArgument(bad +
                           " (xK, K places on one device, is for cuda places)");
  }
  if (!ParseNumber(item->substr(x + 1), kMaxPlacesPerDevice, per_device) ||
      *per_device < 1) {
    return InvalidArgument(bad + " (K of xK must be 1 to " +
                           std::to_string(kMaxPlacesPerDevice) + ")");
  }
  item->resize(x);
  return Status::Ok();
}

// The items of `rest` (after "kind:"), each "a", "a-b" or "all" with an
// optional "xK": (device, places on it), each device once.
StatusOr<std::vector<std::pair<long, long>>> ParseDeviceItems(
    const std::string& spec, Place::Kind kind, const std::string& rest,
    const PlaceCounts& counts) {
  const std::string bad = BadList(spec, kind);
  std::vector<std::pair<long, long>> devices;
  size_t at = 0;
  while (at <= rest.size()) {
    const size_t comma = std::min(rest.find(',', at), rest.size());
    std::string item = rest.substr(at, comma - at);
    long per_device = 1;
    PAREX_RETURN_IF_ERROR(CutPerDevice(kind, bad, &item, &per_device));
    if (item == "all" && rest.find(',') != std::string::npos) {
      return InvalidArgument(bad + " (all stands alone)");
    }
    std::vector<long> ids;
    PAREX_RETURN_IF_ERROR(ParseItem(spec, kind, item, counts, &ids));
    for (long id : ids) {
      for (const auto& [seen, n] : devices) {
        if (seen == id) {
          return InvalidArgument(bad + " (" + PlaceKindName(kind) + ":" +
                                 std::to_string(id) + " twice)");
        }
      }
      devices.emplace_back(id, per_device);
    }
    at = comma + 1;
  }
  return devices;
}

}  // namespace

StatusOr<std::vector<Place>> ParsePlaceList(const std::string& spec,
                                            const PlaceCounts& counts) {
  const size_t colon = spec.find(':');
  Place::Kind kind;
  if (!ParseKind(spec.substr(0, colon), &kind)) {
    return InvalidArgument("'" + spec +
                           "': expected cpu:..., cuda:... or sim:... places");
  }
  if (colon == std::string::npos) return std::vector<Place>{Place{kind, 0}};
  const std::string rest = spec.substr(colon + 1);
  // cpu:N and sim:N are counts.
  long count = 0;
  if (kind != Place::Kind::kCUDA && ParseNumber(rest, kMaxPlaceId, &count)) {
    if (count < 1) {
      return InvalidArgument(BadList(spec, kind) + " (N must be at least 1)");
    }
    std::vector<Place> places;
    for (long i = 0; i < count; ++i)
      places.push_back(Place{kind, static_cast<int>(i)});
    return places;
  }
  PAREX_ASSIGN_OR_RETURN(auto devices,
                         ParseDeviceItems(spec, kind, rest, counts));
  std::vector<Place> places;
  for (const auto& [id, n] : devices) {
    for (long slot = 0; slot < n; ++slot) {
      places.push_back(
          Place{kind, static_cast<int>(id), static_cast<int>(slot)});
    }
  }
  return places;
}

}  // namespace parex
