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
    if (nodes[r].pserver) continue;
    first += static_cast<int>(nodes[r].places.size());
  }
  return first;
}

namespace {

// Reads one parsed topology file into a Topology, a section at a time, in
// the order its errors are reported: the header (cluster, nodes, backend),
// the timeouts, each node, the secret, TLS. Every error names the file and
// the line of the field (else of its block, else none).
class TopologyReader {
 public:
  TopologyReader(const topology::Topology& proto,
                 const pb::TextFormat::ParseInfoTree& tree,
                 const std::string& path, bool allow_pservers)
      : proto_(proto),
        tree_(tree),
        path_(path),
        allow_pservers_(allow_pservers) {
    topo_.path = path;
  }

  StatusOr<Topology> Read() {
    PAREX_RETURN_IF_ERROR(ReadHeader());
    PAREX_RETURN_IF_ERROR(ReadTimeouts());
    for (int i = 0; i < proto_.node_size(); ++i)
      PAREX_RETURN_IF_ERROR(ReadNode(i));
    PAREX_RETURN_IF_ERROR(ReadSecret());
    if (proto_.has_tls()) PAREX_RETURN_IF_ERROR(ReadTls());
    topo_.fingerprint = Fingerprint(proto_);
    return std::move(topo_);
  }

 private:
  // "path:line" of `field` (its `index`th value) in `tree`, else "path".
  std::string LineOf(const pb::FieldDescriptor* field, int index,
                     const pb::TextFormat::ParseInfoTree* tree) const {
    const int line =
        tree == nullptr ? -1 : tree->GetLocation(field, index).line;
    return line >= 0 ? path_ + ":" + std::to_string(line + 1) : path_;
  }
  // Where top-level field `field` is.
  std::string At(const char* field) const {
    return LineOf(topology::Topology::descriptor()->FindFieldByName(field), -1,
                  &tree_);
  }
  // `file` resolved against the topology file's folder.
  std::string Resolve(const std::string& file) const {
    return file[0] == '/' ? file : Folder(path_) + "/" + file;
  }

  // The cluster's name, that nodes are listed, the collective backend.
  Status ReadHeader() {
    topo_.cluster = proto_.cluster();
    if (!ValidNodeName(topo_.cluster)) {
      return InvalidArgument(At("cluster") + ": cluster name '" +
                             Excerpt(topo_.cluster) +
                             "' must be 1-64 letters, digits, '_', '-' or '.'");
    }
    if (proto_.node_size() == 0) {
      return InvalidArgument(path_ + ": no node { ... } listed");
    }
    if (proto_.collective() != topology::Topology::GLOO &&
        proto_.collective() != topology::Topology::MPI) {
      return InvalidArgument(
          At("collective") + ": collective " +
          topology::Topology::Backend_Name(proto_.collective()) +
          " is not supported yet (GLOO and MPI are)");
    }
    topo_.backend =
        proto_.collective() == topology::Topology::MPI ? "mpi" : "gloo";
    return Status::Ok();
  }

  // The three timeouts: each 0 (the default) or in 100 ms..1 h.
  Status ReadTimeouts() {
    for (const char* field : {"connect_timeout_ms", "collective_timeout_ms",
                              "heartbeat_timeout_ms"}) {
      const pb::FieldDescriptor* f =
          topology::Topology::descriptor()->FindFieldByName(field);
      const uint32_t v = proto_.GetReflection()->GetUInt32(proto_, f);
      if (v != 0 && (v < 100 || v > 3600u * 1000u)) {
        return InvalidArgument(At(field) + ": " + field + " " +
                               std::to_string(v) + " is not in 100..3600000");
      }
    }
    if (proto_.connect_timeout_ms() != 0)
      topo_.connect_timeout_ms = proto_.connect_timeout_ms();
    if (proto_.collective_timeout_ms() != 0) {
      topo_.collective_timeout_ms = proto_.collective_timeout_ms();
    }
    if (proto_.heartbeat_timeout_ms() != 0) {
      topo_.heartbeat_timeout_ms = proto_.heartbeat_timeout_ms();
    }
    return Status::Ok();
  }

  // Where a node block is, and its fields' lines.
  struct NodeLines {
    std::string where;                         // the block's line
    const pb::TextFormat::ParseInfoTree* sub;  // its fields
  };
  std::string FieldAt(const NodeLines& lines, const char* field) const {
    return LineOf(topology::Node::descriptor()->FindFieldByName(field), -1,
                  lines.sub);
  }

  // Node #i: a new name, an address no other node has, the TRAINER role,
  // cpu or cuda places. Appended to the topology (rank i).
  Status ReadNode(int i) {
    const topology::Node& n = proto_.node(i);
    const pb::FieldDescriptor* node_field =
        topology::Topology::descriptor()->FindFieldByName("node");
    const NodeLines lines{LineOf(node_field, i, &tree_),
                          tree_.GetTreeForNested(node_field, i)};
    TopologyNode node;
    node.name = n.name();
    node.line = tree_.GetLocation(node_field, i).line + 1;
    if (!ValidNodeName(n.name())) {
      return InvalidArgument(lines.where + ": node #" + std::to_string(i) +
                             ": name '" + Excerpt(n.name()) +
                             "' must be 1-64 letters, digits, '_', '-' or '.'");
    }
    const std::string label = "node '" + n.name() + "'";
    if (topo_.Rank(n.name()) >= 0) {
      return InvalidArgument(
          FieldAt(lines, "name") + ": " + label +
          " is listed twice (also line " +
          std::to_string(topo_.nodes[topo_.Rank(n.name())].line) + ")");
    }
    PAREX_RETURN_IF_ERROR(ReadAddress(n, lines, label, &node));
    node.pserver = n.role() == topology::Node::PSERVER;
    if (node.pserver && topo_.backend == "mpi") {
      return InvalidArgument(
          FieldAt(lines, "role") + ": " + label +
          ": role PSERVER: parameter servers talk over Gloo (collective "
          "GLOO); collective MPI carries all-reduce training only");
    }
    if (node.pserver && !allow_pservers_) {
      return InvalidArgument(
          FieldAt(lines, "role") + ": " + label +
          ": role PSERVER: this command does not run parameter servers "
          "(parex node, launch, place and graph --node do)");
    }
    PAREX_RETURN_IF_ERROR(ReadPlaces(n, lines, label, &node));
    topo_.nodes.push_back(std::move(node));
    return Status::Ok();
  }

  // A node's host and port, an address no node before it has.
  Status ReadAddress(const topology::Node& n, const NodeLines& lines,
                     const std::string& label, TopologyNode* node) {
    if (!ValidHost(n.host())) {
      return InvalidArgument(
          (n.host().empty() ? lines.where : FieldAt(lines, "host")) + ": " +
          label + ": host '" + Excerpt(n.host()) +
          "' is not an address or host name");
    }
    node->host = n.host();
    if (n.port() < 1 || n.port() > 65535) {
      return InvalidArgument(
          (n.port() == 0 ? lines.where : FieldAt(lines, "port")) + ": " +
          label + ": port " + std::to_string(n.port()) + " is not in 1..65535");
    }
    node->port = static_cast<int>(n.port());
    if (!addresses_.insert({node->host, node->port}).second) {
      return InvalidArgument(
          FieldAt(lines, "port") + ": " + label + ": address " + node->host +
          ":" + std::to_string(node->port) + " is already another node's");
    }
    return Status::Ok();
  }

  // A node's places: a place list of cpu or cuda places, named (no "all":
  // every node must know how many places every node has), of the kind of the
  // nodes before it. Whether this machine can run them is for the process
  // that does (parex node, parex launch).
  Status ReadPlaces(const topology::Node& n, const NodeLines& lines,
                    const std::string& label, TopologyNode* node) {
    if (n.places().empty()) {
      return InvalidArgument(lines.where + ": " + label +
                             ": no places (e.g. places: \"cpu:0-1\")");
    }
    const std::string at = FieldAt(lines, "places") + ": " + label + ": ";
    if (n.places().find("all") != std::string::npos) {
      return InvalidArgument(at + "places '" + Excerpt(n.places()) +
                             "': a topology names each node's places "
                             "(cpu:0-3, cuda:0-1), not all: every node must "
                             "know how many places every node has");
    }
    StatusOr<std::vector<Place>> places = ParsePlaceList(n.places());
    if (!places.ok())
      return InvalidArgument(at + "places " + places.status().message());
    const Place& first = places->front();
    if (first.is_sim()) {
      return InvalidArgument(at + "place " + first.ToString() +
                             " is simulated; a cluster runs cpu or cuda "
                             "places");
    }
    if (!topo_.nodes.empty() && topo_.nodes[0].places[0].kind != first.kind) {
      return InvalidArgument(at + "places '" + n.places() + "' are " +
                             PlaceKindName(first.kind) + " places but node '" +
                             topo_.nodes[0].name + "' has " +
                             PlaceKindName(topo_.nodes[0].places[0].kind) +
                             " places: a cluster's places are of one kind");
    }
    node->places = *places;
    node->places_text = n.places();
    return Status::Ok();
  }

  // The secret file: named, private, at least 16 bytes; read now.
  Status ReadSecret() {
    if (proto_.secret_file().empty()) {
      return InvalidArgument(path_ +
                             ": secret_file is missing (a file of at least 16 "
                             "bytes every node of the cluster knows)");
    }
    topo_.secret_path = Resolve(proto_.secret_file());
    StatusOr<std::string> secret = ReadPrivateFileBytes(topo_.secret_path);
    if (!secret.ok()) {
      return InvalidArgument(
          At("secret_file") + ": secret_file: " + secret.status().message() +
          (secret.status().code() == StatusCode::kNotFound
               ? " (make one with: parex secret " + topo_.secret_path + ")"
               : ""));
    }
    if (secret->size() < 16) {
      return InvalidArgument(At("secret_file") + ": secret_file " +
                             topo_.secret_path + " holds " +
                             std::to_string(secret->size()) +
                             " bytes; a cluster secret needs at least 16");
    }
    topo_.secret = std::move(*secret);
    return Status::Ok();
  }

  // The tls block: cert, key and ca, each a PEM file there now (the key
  // private).
  Status ReadTls() {
    const pb::FieldDescriptor* tls_field =
        topology::Topology::descriptor()->FindFieldByName("tls");
    const pb::TextFormat::ParseInfoTree* sub =
        tree_.GetTreeForNested(tls_field, -1);
    const std::string where = LineOf(tls_field, -1, &tree_);
    const std::pair<const char*, const std::string*> parts[] = {
        {"cert", &proto_.tls().cert()},
        {"key", &proto_.tls().key()},
        {"ca", &proto_.tls().ca()}};
    std::string* outs[] = {&topo_.tls_cert, &topo_.tls_key, &topo_.tls_ca};
    for (int i = 0; i < 3; ++i) {
      const std::string& file = *parts[i].second;
      if (file.empty()) {
        return InvalidArgument(
            where + ": tls: " + parts[i].first +
            " is missing (tls needs cert, key and ca: PEM files)");
      }
      const std::string resolved = Resolve(file);
      const std::string at_field =
          LineOf(topology::Tls::descriptor()->FindFieldByName(parts[i].first),
                 -1, sub);
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
    return Status::Ok();
  }

  // SHA-256 of the file's deterministic serialisation without the secret
  // file's path and with the TLS paths replaced by "on".
  static std::string Fingerprint(const topology::Topology& proto) {
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
    return Sha256Hex(bytes);
  }

  const topology::Topology& proto_;
  const pb::TextFormat::ParseInfoTree& tree_;
  const std::string& path_;
  const bool allow_pservers_;
  Topology topo_;
  std::set<std::pair<std::string, int>> addresses_;  // host, port: nodes so far
};

}  // namespace

StatusOr<Topology> ParseTopology(const std::string& text,
                                 const std::string& path, bool allow_pservers) {
  topology::Topology proto;
  pb::TextFormat::Parser parser;
  Collector errors;
  pb::TextFormat::ParseInfoTree tree;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  if (!parser.ParseFromString(text, &proto)) {
    return InvalidArgument(path + ":" + errors.first());
  }
  return TopologyReader(proto, tree, path, allow_pservers).Read();
}

StatusOr<Topology> LoadTopology(const std::string& path, bool allow_pservers) {
  StatusOr<std::string> text = ReadFileBytes(path);
  if (!text.ok()) return text.status();
  return ParseTopology(*text, path, allow_pservers);
}

bool ValidNodeName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
  });
}

}  // namespace parex
