// A TCP port of 127.0.0.1 that nobody holds, for tests that start nodes.
// Ports are drawn below Linux's ephemeral range (32768+), so an outgoing
// connection of another node cannot take one between the draw and its use.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ctime>
#include <random>

namespace parex::testing {

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
    if (free) return port;
  }
  return 0;
}

}  // namespace parex::testing
