#pragma once

#include "base/status.h"
#include "proto/topology_io.h"

namespace parex {

// Loads a topology's `tls { cert key ca }` as CAF's OpenSSL transport will
// (which throws from its I/O thread when it cannot): the certificate chain,
// the key matching it, the CA. Called before a node listens; a failure names
// the topology file and the file at fault, with OpenSSL's reason.
Status CheckTlsMaterial(const Topology& t);

}  // namespace parex
