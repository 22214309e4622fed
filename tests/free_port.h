// A TCP port of 127.0.0.1 that nobody holds, for tests that start nodes.
// Ports are drawn below Linux's ephemeral range (32768+), so an outgoing
// connection of another node cannot take one between the draw and its use.
//
// A test uses its ports more than once (a run, then the nodes again with
// --resume), and they are free in between, where a test running beside it
// (ctest -j) could draw and bind one. So a drawn port is also reserved for
// the life of the test process: an flock() on /tmp/parex-test-ports-<uid>/
// <port>, held through an open descriptor that the kernel drops when the
// process ends (a crashed test leaves no stale reservation). The lock is per
// open file, so one process drawing the same port twice is refused too.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <random>
#include <string>

namespace parex::testing {

// True when this process now holds `port`'s reservation (also when the
// reservation directory cannot be made: the bind check alone then).
inline bool ReserveTestPort(int port) {
  const std::string dir =
      "/tmp/parex-test-ports-" + std::to_string(static_cast<long>(getuid()));
  mkdir(dir.c_str(), 0700);
  const std::string path = dir + "/" + std::to_string(port);
  const int fd = open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return true;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return false;  // another test process (or this one) has it
  }
  return true;  // the descriptor stays open until the process exits
}

inline int FreePort() {
  static std::mt19937 rng(static_cast<unsigned>(getpid()) * 7919u +
                          static_cast<unsigned>(time(nullptr)));
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = 20000 + static_cast<int>(rng() % 12000);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool free =
        bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    if (free && ReserveTestPort(port)) return port;
  }
  return 0;
}

}  // namespace parex::testing
