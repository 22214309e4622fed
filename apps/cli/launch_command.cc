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

// The options passed on to every node: training options only (launch sets
// --topology and --node itself; a usage error otherwise), less --no-pin,
// which is launch's own wherever it stands among them (*no_pin set).
StatusOr<std::vector<std::string>> NodeArgs(const LaunchOptions& o,
                                            bool* no_pin) {
  for (const std::string& arg : o.args) {
    if (arg == "--topology" || arg == "--node" ||
        arg.rfind("--topology=", 0) == 0 || arg.rfind("--node=", 0) == 0) {
      return InvalidArgument("'" + arg +
                             "' is set by launch for each node; "
                             "pass only training options");
    }
  }
  *no_pin = o.no_pin;
  std::vector<std::string> node_args;
  for (const std::string& arg : o.args) {
    if (arg == "--no-pin") {
      *no_pin = true;
    } else {
      node_args.push_back(arg);
    }
  }
  return node_args;
}

// The nodes to start: --only's (each must be in the topology: NotFound
// otherwise), else every node whose host is this machine.
StatusOr<std::vector<const TopologyNode*>> ChooseNodes(
    const LaunchOptions& o, const Topology& topology) {
  for (const std::string& name : o.only) {
    if (topology.Rank(name) < 0) {
      return NotFound(o.topology + ": no node '" + name + "'");
    }
  }
  const std::set<std::string> local = LocalNames();
  std::vector<const TopologyNode*> nodes;
  for (const TopologyNode& n : topology.nodes) {
    const bool chosen = o.only.empty() ? IsLocal(n.host, local)
                                       : std::find(o.only.begin(), o.only.end(),
                                                   n.name) != o.only.end();
    if (chosen) nodes.push_back(&n);
  }
  return nodes;
}

// Each node pinned to its own share of the CPUs this launcher may use,
// when they divide into whole shares: a node's workers and its Gloo and
// CAF threads then compete with each other only, not with the other
// nodes' (2 nodes on 2 cores, Fashion CNN: 5.5k -> 6.05k samples/s, and
// the nodes' steps no longer drift apart, which each collective waited
// out). Empty shares when they do not divide.
std::vector<std::vector<int>> CpuShares(size_t nodes) {
  std::vector<std::vector<int>> pins(nodes);
  const std::vector<int> cpus = train::AllowedCpus();
  const size_t per = cpus.size() / nodes;
  for (size_t k = 0; per > 0 && k < nodes; ++k) {
    pins[k].assign(cpus.begin() + k * per, cpus.begin() + (k + 1) * per);
  }
  return pins;
}

// Nodes on one machine share its cores: each gets its share as its
// scheduler's workers (measured on 2 cores, 2 nodes: 1 worker each trains
// the Fashion MLP 15% and the CNN 7% faster than 2 each, which spin
// against each other), unless the options say --threads.
void AddThreadShare(size_t nodes, std::vector<std::string>* node_args) {
  for (const std::string& arg : *node_args) {
    if (arg == "--threads" || arg.rfind("--threads=", 0) == 0) return;
  }
  const int share =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                      static_cast<int>(nodes));
  node_args->push_back("--threads");
  node_args->push_back(std::to_string(share));
}

// In the child: runs `argv` with its output into `out`, pinned to `pin`
// (unless empty); never returns.
[[noreturn]] void ExecNode(pid_t parent, int out, const std::vector<int>& pin,
                           std::vector<std::string> argv) {
  // A node never outlives its launcher (killed, or ended by SIGPIPE when
  // its output is cut short): it is sent SIGTERM, as when a node fails.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(1);
  if (!pin.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : pin) CPU_SET(c, &set);
    sched_setaffinity(0, sizeof(set), &set);  // kept across exec; best effort
  }
  dup2(out, STDOUT_FILENO);
  dup2(out, STDERR_FILENO);
  std::vector<char*> raw;
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  execv(raw[0], raw.data());
  std::fprintf(stderr, "parex launch: cannot run %s: %s\n", raw[0],
               std::strerror(errno));
  _exit(127);
}

// Starts `parex node` for node `n` with `node_args`, its output on a pipe.
StatusOr<Child> StartNode(const LaunchOptions& o, const TopologyNode& n,
                          const std::vector<std::string>& node_args,
                          const std::vector<int>& pin) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return IoError(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<std::string> argv = {o.parex,    "node",   "--topology",
                                   o.topology, "--node", n.name};
  argv.insert(argv.end(), node_args.begin(), node_args.end());
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) ExecNode(parent, fds[1], pin, std::move(argv));
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return IoError(std::string("fork: ") + std::strerror(errno));
  }
  Child c;
  c.name = n.name;
  c.pid = pid;
  c.fd = fds[0];
  return c;
}

// Passes on what the children wrote (waiting at most 100 ms for it), their
// ends of file closing their pipes.
void ForwardOutput(std::vector<Child>& children) {
  std::vector<pollfd> polls;
  std::vector<Child*> polled;
  for (Child& c : children) {
    if (c.fd >= 0) {
      polls.push_back({c.fd, POLLIN, 0});
      polled.push_back(&c);
    }
  }
  if (polls.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return;
  }
  const int ready = poll(polls.data(), polls.size(), 100);
  for (size_t i = 0; ready > 0 && i < polls.size(); ++i) {
    if (polls[i].revents == 0) continue;
    if (!Drain(*polled[i])) {
      close(polled[i]->fd);
      polled[i]->fd = -1;
    }
  }
}

// Until every child's output ended and every child exited: their output
// forwarded, a signal to the launcher passed on to them (the nodes
// checkpoint and exit themselves), and the others stopped when one fails
// (killed if still there 10 s later). The first node that failed, if any.
struct Failed {
  std::string node;
  int code = 0;
};
Failed SuperviseNodes(std::vector<Child>& children) {
  Failed failed;
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  bool forwarded = false;
  while (true) {
    if (g_signal != 0 && !forwarded) {
      forwarded = true;
      SignalAll(children, g_signal);
    }
    ForwardOutput(children);
    bool all_done = true;
    for (Child& c : children) {
      if (c.done) continue;
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) != c.pid) {
        all_done = false;
        continue;
      }
      c.done = true;
      c.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (c.code != 0 && failed.node.empty()) {
        failed = {c.name, c.code};
        if (!forwarded) {
          // One node failed: the cluster cannot go on; stop the others.
          SignalAll(children, SIGTERM);
          stop_deadline =
              std::chrono::steady_clock::now() + std::chrono::seconds(10);
        }
      }
    }
    bool open = false;
    for (const Child& c : children) open = open || c.fd >= 0;
    if (all_done && !open) return failed;
    if (std::chrono::steady_clock::now() > stop_deadline) {
      SignalAll(children, SIGKILL);
      stop_deadline = std::chrono::steady_clock::time_point::max();
    }
  }
}

// A topology of collective MPI: one mpirun starts all its nodes, here
// (each process the node of its rank), binds each to its cores (unless
// --no-pin), passes their output on and stops the others when one fails.
// Replaces this process; returns only when that cannot be done.
int ExecMpirun(const LaunchOptions& o, const Topology& topology,
               const std::vector<std::string>& node_args, bool no_pin) {
  if (!o.only.empty()) {
    return Fail("launch",
                InvalidArgument("--only: " + o.topology +
                                " is of collective MPI, whose nodes mpirun "
                                "starts together (all of them)"),
                kExitUsage);
  }
  const std::set<std::string> local = LocalNames();
  for (const TopologyNode& n : topology.nodes) {
    if (!IsLocal(n.host, local)) {
      return Fail(
          "launch",
          InvalidArgument(
              o.topology +
              ": collective MPI: parex launch starts "
              "every node of the topology on this machine, and node '" +
              n.name + "' (" + n.host + ") is not here (on several " +
              "machines: mpirun -np " + std::to_string(topology.nodes.size()) +
              " --host ... parex node --topology FILE ...)"),
          kExitUsage);
    }
  }
  const size_t n = topology.nodes.size();
  std::vector<std::string> argv = {"mpirun"};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  if (n > std::thread::hardware_concurrency()) {
    argv.push_back("--oversubscribe");
  }
  if (no_pin) argv.insert(argv.end(), {"--bind-to", "none"});
  argv.insert(argv.end(), {"-np", std::to_string(n), o.parex, "node",
                           "--topology", o.topology});
  argv.insert(argv.end(), node_args.begin(), node_args.end());
  std::printf("parex launch: %zu nodes of %s through mpirun (collective MPI)\n",
              n, o.topology.c_str());
  std::fflush(stdout);
  std::vector<char*> raw;
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  execvp(raw[0], raw.data());
  return Fail("launch",
              IoError(std::string("cannot run mpirun (package openmpi-bin): ") +
                      std::strerror(errno)),
              kExitRuntime);
}

// Checks that every node here can run its places (before any starts),
// then prints which nodes start here and their cores: the exit code of a
// failure, or kExitOk.
int AnnounceNodes(const LaunchOptions& o, const Topology& topology,
                  const std::vector<const TopologyNode*>& nodes,
                  const std::vector<std::vector<int>>& pins) {
  for (const TopologyNode* n : nodes) {
    StatusOr<std::vector<Place>> places = RunnablePlaces(
        n->places_text, o.topology + ": node '" + n->name + "': places");
    if (!places.ok()) {
      return Fail("launch", places.status(), PlacesExitCode(places.status()));
    }
  }
  std::printf("parex launch: %zu of %zu nodes of %s here:", nodes.size(),
              topology.nodes.size(), o.topology.c_str());
  for (size_t k = 0; k < nodes.size(); ++k) {
    std::printf(" %s", nodes[k]->name.c_str());
    if (!pins[k].empty()) std::printf(" (%s)", train::CpuList(pins[k]).c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
  return kExitOk;
}

// The first node that failed, as launch's failure.
int NodeFailed(const Failed& failed) {
  const std::string how =
      failed.code > 128
          ? "was killed by signal " + std::to_string(failed.code - 128)
          : "exited with status " + std::to_string(failed.code);
  return Fail(
      "launch",
      Aborted("node '" + failed.node + "' " + how +
              "; the other nodes were stopped"),
      failed.code == 130 || failed.code == 143 ? failed.code : kExitRuntime);
}

}  // namespace

int RunLaunch(const LaunchOptions& o) {
  const std::string cmd = "launch";
  StatusOr<Topology> topology =
      LoadTopology(o.topology, /*allow_pservers=*/true);
  if (!topology.ok()) return Fail(cmd, topology.status(), kExitUsage);
  bool no_pin = false;
  StatusOr<std::vector<std::string>> node_args = NodeArgs(o, &no_pin);
  if (!node_args.ok()) return Fail(cmd, node_args.status(), kExitUsage);
  if (topology->backend == "mpi") {
    return ExecMpirun(o, *topology, *node_args, no_pin);
  }
  StatusOr<std::vector<const TopologyNode*>> nodes = ChooseNodes(o, *topology);
  if (!nodes.ok()) return Fail(cmd, nodes.status(), kExitUsage);
  if (nodes->empty()) {
    return Fail(cmd, NotFound(o.topology +
                              ": no node's host is this machine (start them "
                              "with parex node on their machines)"));
  }
  const std::vector<std::vector<int>> pins =
      no_pin ? std::vector<std::vector<int>>(nodes->size())
             : CpuShares(nodes->size());
  if (int code = AnnounceNodes(o, *topology, *nodes, pins); code != kExitOk) {
    return code;
  }
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  AddThreadShare(nodes->size(), &*node_args);
  std::vector<Child> children;
  for (size_t k = 0; k < nodes->size(); ++k) {
    StatusOr<Child> child = StartNode(o, *(*nodes)[k], *node_args, pins[k]);
    if (!child.ok()) {
      SignalAll(children, SIGTERM);
      return Fail(cmd, child.status());
    }
    children.push_back(std::move(*child));
  }
  const Failed failed = SuperviseNodes(children);
  if (!failed.node.empty()) return NodeFailed(failed);
  std::printf("parex launch: %zu nodes finished\n", children.size());
  return kExitOk;
}

}  // namespace parex::cli
