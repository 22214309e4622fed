// The TCP sockets a process listens on, read from /proc (Linux), for tests
// that check where a node listens or send garbage to every port it opened.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace parex::testing {

// The socket inodes of `process`'s open descriptors ("self", or a pid).
inline std::set<std::string> SocketInodes(const std::string& process) {
  std::set<std::string> inodes;
  const std::string fds = "/proc/" + process + "/fd";
  DIR* dir = opendir(fds.c_str());
  if (dir == nullptr) return inodes;
  while (dirent* e = readdir(dir)) {
    char target[256] = {};
    const std::string link = fds + "/" + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    const std::string t(target, n > 0 ? n : 0);
    if (t.rfind("socket:[", 0) == 0) inodes.insert(t.substr(8, t.size() - 9));
  }
  closedir(dir);
  return inodes;
}

// The local addresses of the listening TCP sockets among `inodes`, as
// /proc/net/tcp{,6} write them ("0100007F:PORT": IPv4 little-endian hex,
// the port in hex).
inline std::vector<std::string> ListeningAddresses(
    const std::set<std::string>& inodes) {
  std::vector<std::string> listening;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout,
          inode;
      fields >> sl >> local >> remote >> state >> queues >> timer >> retr >>
          uid >> timeout >> inode;
      if (state == "0A" && inodes.count(inode) > 0) listening.push_back(local);
    }
  }
  return listening;
}

// The port of such an address.
inline int PortOfAddress(const std::string& local) {
  return std::stoi(local.substr(local.find(':') + 1), nullptr, 16);
}

}  // namespace parex::testing
