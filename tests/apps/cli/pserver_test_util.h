// Helpers of the parameter-server CLI tests (cluster_pserver_test.cc,
// cluster_pserver_sparse_test.cc).
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "tests/apps/cli/cli_test_util.h"
#include "tests/free_port.h"

namespace parex::testing {

// Trainers a, b, ... with `places` CPU places each, then `pservers`
// pservers p0, p1, ... of one place.
inline std::string PserverTopology(const std::string& dir,
                                   const std::vector<int>& places, int pservers,
                                   const std::string& file = "cluster.pbtxt") {
  WriteTopology(dir, {});
  const std::string path = dir + "/" + file;
  std::ofstream out(path);
  out << "cluster: \"test\"\nsecret_file: \"cluster.secret\"\n"
      << "connect_timeout_ms: 30000\ncollective_timeout_ms: 60000\n";
  for (size_t i = 0; i < places.size(); ++i) {
    out << "node { name: \"" << static_cast<char>('a' + i)
        << "\" host: \"127.0.0.1\" port: " << FreePort()
        << " places: \"cpu:" << places[i] << "\" }\n";
  }
  for (int p = 0; p < pservers; ++p) {
    out << "node { name: \"p" << p
        << "\" host: \"127.0.0.1\" port: " << FreePort()
        << " places: \"cpu:1\" role: PSERVER }\n";
  }
  return path;
}

}  // namespace parex::testing
