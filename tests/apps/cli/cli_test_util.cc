#include "tests/apps/cli/cli_test_util.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "apps/cli/npy.h"
#include "graph/ir/program.h"
#include "kernels/io/model_io.h"
#include "kernels/io/tensor_io.h"
#include "kernels/scope.h"
#include "tests/free_port.h"

extern char** environ;

namespace parex::testing {
namespace fs = std::filesystem;

namespace {

// Single-quoted for sh.
std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string WriteTopology(const std::string& dir,
                          const std::vector<int>& places,
                          const std::string& extra,
                          const std::vector<std::string>& hosts) {
  std::ofstream(dir + "/cluster.secret")
      << "a-test-secret-of-more-than-16-bytes";
  fs::permissions(dir + "/cluster.secret",
                  fs::perms::owner_read | fs::perms::owner_write);
  const std::string path = dir + "/cluster.pbtxt";
  std::ofstream out(path);
  out << "cluster: \"test\"\nsecret_file: \"cluster.secret\"\n"
      << "connect_timeout_ms: 30000\n"
      << (extra.find("collective_timeout_ms") == std::string::npos
              ? "collective_timeout_ms: 60000\n"
              : "")
      << extra;
  for (size_t i = 0; i < places.size(); ++i) {
    out << "node { name: \"" << static_cast<char>('a' + i) << "\" host: \""
        << (i < hosts.size() ? hosts[i] : std::string("127.0.0.1"))
        << "\" port: " << FreePort() << " places: \"cpu:" << places[i]
        << "\" }\n";
  }
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<double> Losses(const std::string& metrics_path) {
  std::vector<double> losses;
  std::istringstream in(ReadFile(metrics_path));
  std::string line;
  while (std::getline(in, line))
    losses.push_back(nlohmann::json::parse(line)["loss"]);
  return losses;
}

std::string ScratchDir(const std::string& name) {
  const fs::path dir = fs::path(PAREX_TEST_TMP_DIR) / ("cli_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

CliRun RunParex(const std::vector<std::string>& args, const std::string& cwd,
                const std::vector<std::string>& prefix) {
  fs::create_directories(cwd);
  const std::string out = (fs::path(cwd) / ".stdout").string();
  const std::string err = (fs::path(cwd) / ".stderr").string();
  std::string cmd = "cd " + Quote(cwd) + " && timeout 240";
  for (const std::string& p : prefix) cmd += " " + Quote(p);
  cmd += " " + Quote(PAREX_CLI);
  for (const std::string& a : args) cmd += " " + Quote(a);
  cmd += " </dev/null >" + Quote(out) + " 2>" + Quote(err);
  const int status = std::system(cmd.c_str());
  CliRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = ReadFile(out);
  run.err = ReadFile(err);
  return run;
}

void ExpectFailures(const std::vector<BadRun>& cases, const std::string& cwd) {
  for (const BadRun& c : cases) {
    std::string what = "parex";
    for (const std::string& a : c.args) what += " " + a;
    CliRun run = RunParex(c.args, cwd);
    EXPECT_EQ(run.exit_code, c.exit_code) << what << "\n" << run.err;
    EXPECT_THAT(run.err, ::testing::HasSubstr(c.message)) << what;
  }
}

Child::Child(const std::vector<std::string>& args, const std::string& cwd,
             const std::string& log, const std::vector<std::string>& prefix)
    : log_(log) {
  fs::create_directories(cwd);
  std::vector<std::string> argv = {"/bin/sh", "-c", ""};
  std::string cmd = "cd '" + cwd + "' && exec";
  for (const std::string& p : prefix) cmd += " '" + p + "'";
  cmd += " '" + std::string(PAREX_CLI) + "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " </dev/null >'" + log + "' 2>&1";
  argv[2] = cmd;
  std::vector<char*> raw;
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  if (posix_spawn(&pid_, "/bin/sh", nullptr, nullptr, raw.data(), environ) != 0)
    pid_ = -1;
}

Child::~Child() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGCONT);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool Child::WaitFor(const std::string& text,
                    std::chrono::milliseconds limit) const {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (Log().find(text) != std::string::npos) return true;
    if (exited_) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

bool Child::Poll() {
  if (exited_) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    exited_ = true;
    exit_code_ =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return exited_;
}

std::vector<std::string> NodeArgs(const std::string& topology,
                                  const std::string& node,
                                  std::vector<std::string> more) {
  std::vector<std::string> a = {"node",   "--topology", topology,
                                "--node", node,         "--no-progress"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::vector<int64_t> WaitAll(std::vector<Child*> children,
                             Clock::time_point start,
                             std::chrono::milliseconds limit) {
  std::vector<int64_t> ms(children.size(), -1);
  while (Clock::now() < start + limit) {
    bool all = true;
    for (size_t i = 0; i < children.size(); ++i) {
      if (ms[i] < 0 && children[i]->Poll()) {
        ms[i] = std::chrono::duration_cast<std::chrono::milliseconds>(
                    Clock::now() - start)
                    .count();
      }
      all = all && ms[i] >= 0;
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ms;
}

void Send(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      !bytes.empty()) {
    (void)!write(fd, bytes.data(), bytes.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  close(fd);
}

int PortOf(const std::string& topology, char node) {
  const std::string text = ReadFile(topology);
  const size_t at = text.find(std::string("name: \"") + node + "\"");
  const size_t port = text.find("port: ", at);
  return std::stoi(text.substr(port + 6));
}

std::string ParametersDigest(const std::string& output) {
  const std::string key = "parameters      sha256 ";
  const size_t at = output.find(key);
  if (at == std::string::npos) return "";
  return output.substr(at + key.size(), 64);
}

std::vector<std::string> ParameterDigests(const std::string& output) {
  const std::string key = "parameters      sha256 ";
  std::vector<std::string> digests;
  for (size_t at = output.find(key); at != std::string::npos;
       at = output.find(key, at + key.size())) {
    digests.push_back(output.substr(at + key.size(), 64));
  }
  return digests;
}

std::string UndisturbedDigest(const std::string& topology,
                              const std::vector<std::string>& train,
                              const std::string& cwd) {
  std::vector<std::string> launch = {"launch", "--topology", topology,
                                     "--no-progress"};
  launch.insert(launch.end(), train.begin(), train.end());
  CliRun quiet = RunParex(launch, cwd);
  EXPECT_EQ(quiet.exit_code, 0) << quiet.out << quiet.err;
  const std::string digest = ParametersDigest(quiet.out);
  EXPECT_EQ(digest.size(), 64u) << quiet.out;
  return digest;
}

void WritePaddleCnnFixtureData(const std::string& dir) {
  for (const char* name : {"x", "label"}) {
    std::vector<Tensor> parts;
    for (int i = 0; i < 10; ++i) {
      Tensor t;
      ASSERT_TRUE(LoadTensorFile(std::string(PAREX_TEST_FIXTURES_DIR) +
                                     "/paddle_cnn_bn_adam/batches/" + name +
                                     "_" + std::to_string(i),
                                 &t)
                      .ok());
      parts.push_back(std::move(t));
    }
    Dims dims = parts[0].dims();
    dims[0] *= 10;
    Tensor all(parts[0].dtype(), dims);
    char* out = static_cast<char*>(all.raw_data());
    for (const Tensor& p : parts) {
      std::memcpy(out, p.raw_data(), p.bytes());
      out += p.bytes();
    }
    ASSERT_TRUE(WriteNpy(dir + "/" + name + ".npy", all).ok());
  }
}

void ExpectPaddlesFinalPersistables(const std::string& saved_dir,
                                    const std::string& fixture,
                                    int min_compared) {
  StatusOr<Program> main = Program::Load(fixture + "/main.pdmodel");
  ASSERT_TRUE(main.ok());
  Scope saved, paddle;
  ASSERT_TRUE(LoadPersistables(*main, saved_dir, &saved).ok());
  ASSERT_TRUE(LoadPersistables(*main, fixture + "/final", &paddle).ok());
  int compared = 0;
  for (const std::string& name : PersistableTensorNames(*main)) {
    const Tensor& w = *paddle.FindVar(name)->GetTensor();
    const Tensor& g = *saved.FindVar(name)->GetTensor();
    if (w.dtype() != DType::kFP32 || name.rfind("learning_rate", 0) == 0)
      continue;
    ASSERT_EQ(g.dims(), w.dims()) << name;
    for (int64_t i = 0; i < w.numel(); ++i) {
      ASSERT_NEAR(g.data<float>()[i], w.data<float>()[i],
                  1e-5 + 1e-3 * std::abs(w.data<float>()[i]))
          << name << "[" << i << "]";
    }
    ++compared;
  }
  EXPECT_GE(compared, min_compared);
}

}  // namespace parex::testing
