// Topology files (proto/topology.proto, text format): parsed and validated
// into Topology. Every error names the file and, where the file has one, the
// line and the node: "two.pbtxt:7: node 'b': port 70000 is not in 1..65535".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/place.h"
#include "base/status.h"

namespace parex {

struct TopologyNode {
  std::string name;
  std::string host;
  int port = 0;
  std::vector<Place> places;
  std::string places_text;  // as written
  bool pserver = false;     // role PSERVER (else TRAINER)
  int line = 0;             // 1-based line of the node's block
};

struct Topology {
  std::string path;  // the file it came from
  std::string cluster;
  std::vector<TopologyNode> nodes;  // rank order
  std::string backend;              // "gloo"
  std::string secret;               // the secret file's bytes
  std::string secret_path;          // resolved
  int64_t connect_timeout_ms = 60000;
  int64_t collective_timeout_ms = 60000;
  int64_t heartbeat_timeout_ms = 4000;
  // TLS material (resolved paths; all empty without a tls block). The key
  // is a secret: refused when others may read it.
  std::string tls_cert, tls_key, tls_ca;
  bool tls() const { return !tls_cert.empty(); }
  // SHA-256 (hex) of what every node must agree on: cluster, nodes in order
  // (name, host, port, role, places), backend, timeouts and whether TLS is
  // on. The paths of the secret file and the TLS material are left out
  // (machines may keep them in different places).
  std::string fingerprint;

  // The rank of node `name`, or -1.
  int Rank(const std::string& name) const;
  // Places over all trainer nodes (the data-parallel places; a pserver's
  // run its updates), and the global index of node `rank`'s first place
  // (the trainers' before it, in order).
  int TotalPlaces() const;
  int FirstPlace(int rank) const;
};

// Parses and validates `text` as if read from `path` (relative secret files
// are resolved against path's folder, and read). Nodes of role PSERVER are
// refused unless `allow_pservers` (the commands that run or place
// parameter-server training read them).
StatusOr<Topology> ParseTopology(const std::string& text,
                                 const std::string& path,
                                 bool allow_pservers = false);
// A node's (or cluster's) name: 1-64 letters, digits, '_', '-' or '.'.
bool ValidNodeName(std::string_view name);
// Reads `path` (a regular file) and parses it.
StatusOr<Topology> LoadTopology(const std::string& path,
                                bool allow_pservers = false);

}  // namespace parex
