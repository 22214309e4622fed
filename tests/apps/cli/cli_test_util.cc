#include "tests/apps/cli/cli_test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/free_port.h"

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

CliRun RunParex(const std::vector<std::string>& args, const std::string& cwd) {
  fs::create_directories(cwd);
  const std::string out = (fs::path(cwd) / ".stdout").string();
  const std::string err = (fs::path(cwd) / ".stderr").string();
  std::string cmd = "cd " + Quote(cwd) + " && timeout 240 " + Quote(PAREX_CLI);
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

}  // namespace parex::testing
