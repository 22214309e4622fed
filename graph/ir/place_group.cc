#include "graph/ir/place_group.h"

#include <algorithm>
#include <set>

#include "base/text.h"
#include "proto/topology_io.h"

namespace parex {
namespace {

bool ValidPlacesText(std::string_view text) {
  if (text.empty() || text.size() > 64) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ':' ||
           c == ',' || c == '-';
  });
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

Status Bad(std::string_view text, const std::string& why) {
  return InvalidArgument("place_group '" + Excerpt(std::string(text)) +
                         "': " + why +
                         " (written role[/node,node...[/places]], role "
                         "trainer or pserver)");
}

}  // namespace

const char* NodeRoleName(NodeRole role) {
  return role == NodeRole::kPserver ? "pserver" : "trainer";
}

bool PlaceGroup::Includes(NodeRole node_role, std::string_view name) const {
  return node_role == role && (nodes.empty() || BlockOf(name) >= 0);
}

int PlaceGroup::BlockOf(std::string_view name) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::string PlaceGroup::ToString() const {
  std::string out = NodeRoleName(role);
  if (nodes.empty() && places.empty()) return out;
  out += '/';
  for (size_t i = 0; i < nodes.size(); ++i) {
    out += (i > 0 ? "," : "") + nodes[i];
  }
  if (!places.empty()) out += "/" + places;
  return out;
}

StatusOr<PlaceGroup> ParsePlaceGroup(std::string_view text) {
  const std::vector<std::string_view> parts = Split(text, '/');
  if (parts.size() > 3) return Bad(text, "more than three parts");
  PlaceGroup group;
  if (parts[0] == "trainer") {
    group.role = NodeRole::kTrainer;
  } else if (parts[0] == "pserver") {
    group.role = NodeRole::kPserver;
  } else {
    return Bad(text, "role '" + Excerpt(std::string(parts[0])) +
                         "' is neither trainer nor pserver");
  }
  if (parts.size() >= 2 && !(parts.size() == 3 && parts[1].empty())) {
    std::set<std::string_view> seen;
    for (std::string_view node : Split(parts[1], ',')) {
      if (!ValidNodeName(node)) {
        return Bad(text, "node '" + Excerpt(std::string(node)) +
                             "' is not 1-64 letters, digits, '_', '-' or '.'");
      }
      if (!seen.insert(node).second) {
        return Bad(text, "node '" + std::string(node) + "' is named twice");
      }
      group.nodes.emplace_back(node);
    }
  }
  if (parts.size() == 3) {
    if (!ValidPlacesText(parts[2])) {
      return Bad(text, "places '" + Excerpt(std::string(parts[2])) +
                           "' are not written as --places takes them");
    }
    group.places = std::string(parts[2]);
  }
  return group;
}

namespace {

StatusOr<std::optional<PlaceGroup>> GroupFromText(const std::string& text,
                                                  const std::string& label) {
  StatusOr<PlaceGroup> group = ParsePlaceGroup(text);
  if (!group.ok()) return group.status().WithContext(label);
  return std::optional<PlaceGroup>(*group);
}

}  // namespace

StatusOr<std::optional<PlaceGroup>> PlaceGroupOf(const OpDesc& op) {
  const proto::OpDesc::Attr* attr = op.FindAttr(kPlaceGroupAttr);
  if (attr == nullptr) return std::optional<PlaceGroup>();
  if (attr->type() != proto::STRING) {
    return InvalidArgument(op.Label() +
                           ": attribute place_group is not a "
                           "string");
  }
  return GroupFromText(attr->s(), op.Label());
}

StatusOr<std::optional<PlaceGroup>> PlaceGroupOf(const VarDesc& var) {
  for (const auto& attr : var.proto().attrs()) {
    if (attr.name() != kPlaceGroupAttr) continue;
    const std::string label = "variable '" + Excerpt(var.name(), 80) + "'";
    if (attr.type() != proto::STRING) {
      return InvalidArgument(label + ": attribute place_group is not a string");
    }
    return GroupFromText(attr.s(), label);
  }
  return std::optional<PlaceGroup>();
}

void SetPlaceGroup(OpDesc* op, const PlaceGroup& group) {
  op->SetAttr<std::string>(kPlaceGroupAttr, group.ToString());
}

void SetPlaceGroup(VarDesc* var, const PlaceGroup& group) {
  proto::VarDesc* desc = var->mutable_proto();
  proto::VarDesc::Attr* attr = nullptr;
  for (auto& a : *desc->mutable_attrs()) {
    if (a.name() == kPlaceGroupAttr) attr = &a;
  }
  if (attr == nullptr) attr = desc->add_attrs();
  attr->Clear();
  attr->set_name(kPlaceGroupAttr);
  attr->set_type(proto::STRING);
  attr->set_s(group.ToString());
}

std::pair<int64_t, int64_t> RowBlock(int64_t rows, int block, int blocks) {
  const int64_t base = rows / blocks;
  const int64_t extra = rows % blocks;
  const int64_t begin = block * base + std::min<int64_t>(block, extra);
  return {begin, begin + base + (block < extra ? 1 : 0)};
}

}  // namespace parex
