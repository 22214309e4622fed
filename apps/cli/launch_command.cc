// parex launch: starts every node of a topology whose host is this machine
// as a child `parex node`, prefixes each output line with the node's name,
// and fails as a whole when one node fails (the others are stopped).
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apps/cli/cli.h"
#include "apps/train/cluster_session.h"
#include "proto/topology_io.h"

namespace parex::cli {
namespace {

// The addresses of this machine's interfaces and its host name.
std::set<std::string> LocalNames() {
  std::set<std::string> names = {"localhost", "127.0.0.1", "::1"};
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) names.insert(host);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr) continue;
      char text[INET6_ADDRSTRLEN] = {};
      if (a->ifa_addr->sa_family == AF_INET) {
        inet_ntop(AF_INET,
                  &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text,
                  sizeof(text));
      } else if (a->ifa_addr->sa_family == AF_INET6) {
        inet_ntop(AF_INET6,
                  &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr,
                  text, sizeof(text));
      } else {
        continue;
      }
      names.insert(text);
    }
    freeifaddrs(list);
  }
  return names;
}

bool IsLocal(const std::string& host, const std::set<std::string>& local) {
  if (local.count(host) > 0) return true;
  return host.rfind("127.", 0) == 0;  // the whole loopback net
}

struct Child {
  std::string name;
  pid_t pid = -1;
  int fd = -1;          // its stdout and stderr
  std::string partial;  // an unfinished line
  bool done = false;
  int code = 0;  // exit code (128 + signal when killed)
};

volatile sig_atomic_t g_signal = 0;
void OnSignal(int sig) { g_signal = sig; }

void Emit(const Child& c, const std::string& line) {
  if (line.empty()) {
    std::printf("[%s]\n", c.name.c_str());
  } else {
    std::printf("[%s] %s\n", c.name.c_str(), line.c_str());
  }
  std::fflush(stdout);
}

// Reads what `c` wrote; false at end of file.
bool Drain(Child& c) {
  char buf[4096];
  const ssize_t got = read(c.fd, buf, sizeof(buf));
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (got <= 0) {
    if (!c.partial.empty()) Emit(c, c.partial);
    c.partial.clear();
    return false;
  }
  c.partial.append(buf, static_cast<size_t>(got));
  for (size_t nl = c.partial.find('\n'); nl != std::string::npos;
       nl = c.partial.find('\n')) {
    std::string line = c.partial.substr(0, nl);
    // A live progress line redraws with \r: keep what was drawn last.
    const size_t cr = line.rfind('\r');
    if (cr != std::string::npos) line = line.substr(cr + 1);
    Emit(c, line);
    c.partial.erase(0, nl + 1);
  }
  return true;
}

void SignalAll(std::vector<Child>& children, int sig) {
  for (Child& c : children) {
    if (!c.done && c.pid > 0) kill(c.pid, sig);
  }
}

}  // namespace

int RunLaunch(const LaunchOptions& o) {
  const std::string cmd = "launch";
  StatusOr<Topology> topology = LoadTopology(o.topology);
  if (!topology.ok()) return Fail(cmd, topology.status(), kExitUsage);
  for (const std::string& arg : o.args) {
    if (arg == "--topology" || arg == "--node" ||
        arg.rfind("--topology=", 0) == 0 || arg.rfind("--node=", 0) == 0) {
      return Fail(cmd,
                  InvalidArgument("'" + arg +
                                  "' is set by launch for each node; "
                                  "pass only training options"),
                  kExitUsage);
    }
  }
  // --no-pin is launch's own wherever it stands among the node options.
  bool no_pin = o.no_pin;
  std::vector<std::string> node_args;
  for (const std::string& arg : o.args) {
    if (arg == "--no-pin") {
      no_pin = true;
    } else {
      node_args.push_back(arg);
    }
  }
  const std::set<std::string> local = LocalNames();
  std::vector<const TopologyNode*> nodes;
  for (const std::string& name : o.only) {
    if (topology->Rank(name) < 0) {
      return Fail(cmd, NotFound(o.topology + ": no node '" + name + "'"),
                  kExitUsage);
    }
  }
  for (const TopologyNode& n : topology->nodes) {
    const bool chosen = o.only.empty() ? IsLocal(n.host, local)
                                       : std::find(o.only.begin(), o.only.end(),
                                                   n.name) != o.only.end();
    if (chosen) nodes.push_back(&n);
  }
  if (nodes.empty()) {
    return Fail(cmd, NotFound(o.topology +
                              ": no node's host is this machine (start them "
                              "with parex node on their machines)"));
  }
  // Each node pinned to its own share of the CPUs this launcher may use,
  // when they divide into whole shares: a node's workers and its Gloo and
  // CAF threads then compete with each other only, not with the other
  // nodes' (2 nodes on 2 cores, Fashion CNN: 5.5k -> 6.05k samples/s, and
  // the nodes' steps no longer drift apart, which each collective waited
  // out). --no-pin leaves them to the kernel.
  std::vector<std::vector<int>> pins(nodes.size());
  if (!no_pin) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
      }
    }
    const size_t per = cpus.size() / nodes.size();
    for (size_t k = 0; per > 0 && k < nodes.size(); ++k) {
      pins[k].assign(cpus.begin() + k * per, cpus.begin() + (k + 1) * per);
    }
  }
  std::printf("parex launch: %zu of %zu nodes of %s here:", nodes.size(),
              topology->nodes.size(), o.topology.c_str());
  for (size_t k = 0; k < nodes.size(); ++k) {
    std::printf(" %s", nodes[k]->name.c_str());
    if (!pins[k].empty()) std::printf(" (%s)", train::CpuList(pins[k]).c_str());
  }
  std::printf("\n");
  std::fflush(stdout);

  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  // Nodes on one machine share its cores: each gets its share as its
  // scheduler's workers (measured on 2 cores, 2 nodes: 1 worker each trains
  // the Fashion MLP 15% and the CNN 7% faster than 2 each, which spin
  // against each other), unless the options say --threads.
  bool threads_given = false;
  for (const std::string& arg : node_args) {
    threads_given =
        threads_given || arg == "--threads" || arg.rfind("--threads=", 0) == 0;
  }
  const int share =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                      static_cast<int>(nodes.size()));

  std::vector<Child> children;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const TopologyNode* n = nodes[k];
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      SignalAll(children, SIGTERM);
      return Fail(cmd, IoError(std::string("pipe: ") + std::strerror(errno)));
    }
    std::vector<std::string> argv = {o.parex,    "node",   "--topology",
                                     o.topology, "--node", n->name};
    argv.insert(argv.end(), node_args.begin(), node_args.end());
    if (!threads_given) {
      argv.push_back("--threads");
      argv.push_back(std::to_string(share));
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      // A node never outlives its launcher (killed, or ended by SIGPIPE when
      // its output is cut short): it is sent SIGTERM, as when a node fails.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(1);
      if (!pins[k].empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (int c : pins[k]) CPU_SET(c, &set);
        sched_setaffinity(0, sizeof(set),
                          &set);  // kept across exec; best effort
      }
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      std::vector<char*> raw;
      for (std::string& a : argv) raw.push_back(a.data());
      raw.push_back(nullptr);
      execv(raw[0], raw.data());
      std::fprintf(stderr, "parex launch: cannot run %s: %s\n", raw[0],
                   std::strerror(errno));
      _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      SignalAll(children, SIGTERM);
      return Fail(cmd, IoError(std::string("fork: ") + std::strerror(errno)));
    }
    Child c;
    c.name = n->name;
    c.pid = pid;
    c.fd = fds[0];
    children.push_back(std::move(c));
  }

  // Until every child's output ended and every child exited.
  std::string failed;  // the first node that failed
  int failed_code = 0;
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  bool forwarded = false;
  while (true) {
    if (g_signal != 0 && !forwarded) {
      forwarded = true;
      SignalAll(children,
                g_signal);  // the nodes checkpoint and exit themselves
    }
    std::vector<pollfd> polls;
    std::vector<Child*> polled;
    for (Child& c : children) {
      if (c.fd >= 0) {
        polls.push_back({c.fd, POLLIN, 0});
        polled.push_back(&c);
      }
    }
    if (!polls.empty()) {
      const int ready = poll(polls.data(), polls.size(), 100);
      for (size_t i = 0; ready > 0 && i < polls.size(); ++i) {
        if (polls[i].revents == 0) continue;
        if (!Drain(*polled[i])) {
          close(polled[i]->fd);
          polled[i]->fd = -1;
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    bool all_done = true;
    for (Child& c : children) {
      if (c.done) continue;
      int status = 0;
      const pid_t r = waitpid(c.pid, &status, WNOHANG);
      if (r == c.pid) {
        c.done = true;
        c.code =
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (c.code != 0 && failed.empty()) {
          failed = c.name;
          failed_code = c.code;
          if (!forwarded) {
            // One node failed: the cluster cannot go on; stop the others.
            SignalAll(children, SIGTERM);
            stop_deadline =
                std::chrono::steady_clock::now() + std::chrono::seconds(10);
          }
        }
      } else {
        all_done = false;
      }
    }
    if (all_done) {
      bool open = false;
      for (const Child& c : children) open = open || c.fd >= 0;
      if (!open) break;
    }
    if (std::chrono::steady_clock::now() > stop_deadline) {
      SignalAll(children, SIGKILL);
      stop_deadline = std::chrono::steady_clock::time_point::max();
    }
  }
  if (!failed.empty()) {
    std::string how =
        failed_code > 128
            ? "was killed by signal " + std::to_string(failed_code - 128)
            : "exited with status " + std::to_string(failed_code);
    return Fail(
        cmd,
        Aborted("node '" + failed + "' " + how +
                "; the other nodes were stopped"),
        failed_code == 130 || failed_code == 143 ? failed_code : kExitRuntime);
  }
  std::printf("parex launch: %zu nodes finished\n", children.size());
  return kExitOk;
}

}  // namespace parex::cli
