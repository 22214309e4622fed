#include "proto/topology_io.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "base/digest.h"
#include "base/file_io.h"
#include "base/text.h"
#include "proto/topology.pb.h"

namespace parex {
namespace {

namespace pb = google::protobuf;

class Collector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column,
                const std::string& message) override {
    if (first_.empty()) {
      first_ = std::to_string(line + 1) + ":" + std::to_string(column + 1) +
               ": " + message;
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
  });
}

bool ValidHost(const std::string& host) {
  if (host.empty() || host.size() > 253) return false;
  return std::all_of(host.begin(), host.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '.' || c == ':';
  });
}

std::string Folder(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "."
                                    : path.substr(0, slash == 0 ? 1 : slash);
}

}  // namespace

int Topology::Rank(const std::string& name) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int Topology::TotalPlaces() const {
  return FirstPlace(static_cast<int>(nodes.size()));
}

int Topology::FirstPlace(int rank) const {
  int first = 0;
  for (int r = 0; r < rank && r < static_cast<int>(nodes.size()); ++r) {
    first += static_cast<int>(nodes[r].places.size());
  }
  return first;
}

StatusOr<Topology> ParseTopology(const std::string& text,
                                 const std::string& path) {
  topology::Topology proto;
  pb::TextFormat::Parser parser;
  Collector errors;
  pb::TextFormat::ParseInfoTree tree;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  if (!parser.ParseFromString(text, &proto)) {
    return InvalidArgument(path + ":" + errors.first());
  }
  const pb::Descriptor* top = topology::Topology::descriptor();
  const pb::Descriptor* node_desc = topology::Node::descriptor();
  auto line_of = [&](const pb::FieldDescriptor* field, int index,
                     const pb::TextFormat::ParseInfoTree* t) {
    const int line = t == nullptr ? -1 : t->GetLocation(field, index).line;
    return line >= 0 ? path + ":" + std::to_string(line + 1) : path;
  };
  auto at = [&](const char* field) {
    return line_of(top->FindFieldByName(field), -1, &tree);
  };

  Topology topo;
  topo.path = path;
  topo.cluster = proto.cluster();
  if (!ValidName(topo.cluster)) {
    return InvalidArgument(at("cluster") + ": cluster name '" +
                           Excerpt(topo.cluster) +
                           "' must be 1-64 letters, digits, '_', '-' or '.'");
  }
  if (proto.node_size() == 0) {
    return InvalidArgument(path + ": no node { ... } listed");
  }
  if (proto.collective() != topology::Topology::GLOO) {
    return InvalidArgument(
        at("collective") + ": collective " +
        topology::Topology::Backend_Name(proto.collective()) +
        " is not supported yet (GLOO is)");
  }
  topo.backend = "gloo";
  for (const char* field : {"connect_timeout_ms", "collective_timeout_ms",
                            "heartbeat_timeout_ms"}) {
    const pb::FieldDescriptor* f = top->FindFieldByName(field);
    const uint32_t v = proto.GetReflection()->GetUInt32(proto, f);
    if (v != 0 && (v < 100 || v > 3600u * 1000u)) {
      return InvalidArgument(at(field) + ": " + field + " " +
                             std::to_string(v) + " is not in 100..3600000");
    }
  }
  if (proto.connect_timeout_ms() != 0)
    topo.connect_timeout_ms = proto.connect_timeout_ms();
  if (proto.collective_timeout_ms() != 0) {
    topo.collective_timeout_ms = proto.collective_timeout_ms();
  }
  if (proto.heartbeat_timeout_ms() != 0) {
    topo.heartbeat_timeout_ms = proto.heartbeat_timeout_ms();
  }

  const pb::FieldDescriptor* node_field = top->FindFieldByName("node");
  std::set<std::pair<std::string, int>> addresses;
  for (int i = 0; i < proto.node_size(); ++i) {
    const topology::Node& n = proto.node(i);
    const pb::TextFormat::ParseInfoTree* sub =
        tree.GetTreeForNested(node_field, i);
    const std::string where = line_of(node_field, i, &tree);
    auto field_at = [&](const char* field) {
      return line_of(node_desc->FindFieldByName(field), -1, sub);
    };
    TopologyNode node;
    node.name = n.name();
    node.line = tree.GetLocation(node_field, i).line + 1;
    if (!ValidName(n.name())) {
      return InvalidArgument(where + ": node #" + std::to_string(i) +
                             ": name '" + Excerpt(n.name()) +
                             "' must be 1-64 letters, digits, '_', '-' or '.'");
    }
    const std::string label = "node '" + n.name() + "'";
    if (topo.Rank(n.name()) >= 0) {
      return InvalidArgument(
          field_at("name") + ": " + label + " is listed twice (also line " +
          std::to_string(topo.nodes[topo.Rank(n.name())].line) + ")");
    }
    if (!ValidHost(n.host())) {
      return InvalidArgument((n.host().empty() ? where : field_at("host")) +
                             ": " + label + ": host '" + Excerpt(n.host()) +
                             "' is not an address or host name");
    }
    node.host = n.host();
    if (n.port() < 1 || n.port() > 65535) {
      return InvalidArgument((n.port() == 0 ? where : field_at("port")) + ": " +
                             label + ": port " + std::to_string(n.port()) +
                             " is not in 1..65535");
    }
    node.port = static_cast<int>(n.port());
    if (!addresses.insert({node.host, node.port}).second) {
      return InvalidArgument(field_at("port") + ": " + label + ": address " +
                             node.host + ":" + std::to_string(node.port) +
                             " is already another node's");
    }
    if (n.role() != topology::Node::TRAINER) {
      return InvalidArgument(field_at("role") + ": " + label + ": role " +
                             topology::Node::Role_Name(n.role()) +
                             " is not supported yet (TRAINER is)");
    }
    if (n.places().empty()) {
      return InvalidArgument(where + ": " + label +
                             ": no places (e.g. places: \"cpu:0-1\")");
    }
    StatusOr<std::vector<Place>> places = ParsePlaceList(n.places());
    if (!places.ok()) {
      return InvalidArgument(field_at("places") + ": " + label + ": places " +
                             places.status().message());
    }
    for (const Place& p : *places) {
      if (!p.is_cpu()) {
        return InvalidArgument(field_at("places") + ": " + label + ": place " +
                               p.ToString() +
                               " is not a CPU place (the cluster runs "
                               "CPU places; GPUs come later)");
      }
    }
    node.places = *places;
    node.places_text = n.places();
    topo.nodes.push_back(std::move(node));
  }

  if (proto.secret_file().empty()) {
    return InvalidArgument(path +
                           ": secret_file is missing (a file of at least 16 "
                           "bytes every node of the cluster knows)");
  }
  auto resolve = [&](const std::string& file) {
    return file[0] == '/' ? file : Folder(path) + "/" + file;
  };
  topo.secret_path = resolve(proto.secret_file());
  StatusOr<std::string> secret = ReadPrivateFileBytes(topo.secret_path);
  if (!secret.ok()) {
    return InvalidArgument(
        at("secret_file") + ": secret_file: " + secret.status().message() +
        (secret.status().code() == StatusCode::kNotFound
             ? " (make one with: parex secret " + topo.secret_path + ")"
             : ""));
  }
  if (secret->size() < 16) {
    return InvalidArgument(at("secret_file") + ": secret_file " +
                           topo.secret_path + " holds " +
                           std::to_string(secret->size()) +
                           " bytes; a cluster secret needs at least 16");
  }
  topo.secret = std::move(*secret);

  if (proto.has_tls()) {
    const pb::FieldDescriptor* tls_field = top->FindFieldByName("tls");
    const pb::TextFormat::ParseInfoTree* sub =
        tree.GetTreeForNested(tls_field, -1);
    const pb::Descriptor* tls_desc = topology::Tls::descriptor();
    const std::string where = line_of(tls_field, -1, &tree);
    const std::pair<const char*, const std::string*> parts[] = {
        {"cert", &proto.tls().cert()},
        {"key", &proto.tls().key()},
        {"ca", &proto.tls().ca()}};
    std::string* outs[] = {&topo.tls_cert, &topo.tls_key, &topo.tls_ca};
    for (int i = 0; i < 3; ++i) {
      const std::string& file = *parts[i].second;
      if (file.empty()) {
        return InvalidArgument(
            where + ": tls: " + parts[i].first +
            " is missing (tls needs cert, key and ca: PEM files)");
      }
      const std::string resolved = resolve(file);
      const std::string at_field =
          line_of(tls_desc->FindFieldByName(parts[i].first), -1, sub);
      // The key is a secret; the certificates are public. Each must be
      // there now: a node finds out before it listens, not at a peer's
      // first connection.
      StatusOr<std::string> bytes =
          i == 1 ? ReadPrivateFileBytes(resolved) : ReadFileBytes(resolved);
      if (!bytes.ok()) {
        return InvalidArgument(at_field + ": tls " + parts[i].first + ": " +
                               bytes.status().message());
      }
      if (bytes->find("-----BEGIN ") == std::string::npos) {
        return InvalidArgument(at_field + ": tls " + parts[i].first + ": " +
                               resolved +
                               " is not a PEM file (no -----BEGIN line)");
      }
      *outs[i] = resolved;
    }
  }

  topology::Topology canonical = proto;
  canonical.clear_secret_file();
  if (canonical.has_tls()) {
    canonical.mutable_tls()->set_cert("on");
    canonical.mutable_tls()->set_key("on");
    canonical.mutable_tls()->set_ca("on");
  }
  std::string bytes;
  pb::io::StringOutputStream stream(&bytes);
  {
    pb::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    canonical.SerializeToCodedStream(&coded);
  }
  topo.fingerprint = Sha256Hex(bytes);
  return topo;
}

StatusOr<Topology> LoadTopology(const std::string& path) {
  StatusOr<std::string> text = ReadFileBytes(path);
  if (!text.ok()) return text.status();
  return ParseTopology(*text, path);
}

}  // namespace parex
