#include "base/file_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace parex {
namespace {

namespace fs = std::filesystem;

std::string Scratch(const std::string& name) {
  const fs::path dir = fs::path(PAREX_TEST_TMP_DIR) /
                       ("file_io_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

TEST(FileIoTest, WriteReplacesARegularFileAtomically) {
  const std::string dir = Scratch("atomic");
  const std::string path = dir + "/out.bin";
  ASSERT_TRUE(WriteFileBytes(path, "first").ok());
  ASSERT_TRUE(WriteFileBytes(path, "second").ok());
  EXPECT_EQ(*ReadFileBytes(path), "second");
  // Nothing but the target is left behind.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.exists();
  EXPECT_EQ(entries, 1);
}

TEST(FileIoTest, WriteNeverReplacesASymlinkFifoOrDirectory) {
  const std::string dir = Scratch("special");
  { std::ofstream(dir + "/target") << "keep"; }
  fs::create_symlink("target", dir + "/link");
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0644), 0);
  fs::create_directories(dir + "/sub");
  for (const char* name : {"link", "fifo", "sub"}) {
    Status s = WriteFileBytes(dir + "/" + name, "x");
    EXPECT_FALSE(s.ok()) << name;
    EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
  }
  EXPECT_TRUE(fs::is_symlink(dir + "/link"));
  EXPECT_EQ(*ReadFileBytes(dir + "/target"), "keep");
  EXPECT_TRUE(fs::is_fifo(dir + "/fifo"));
  // A planted "<path>.tmp" symlink is not followed: mkstemp picks a new name.
  fs::create_symlink("target", dir + "/new.bin.tmp");
  ASSERT_TRUE(WriteFileBytes(dir + "/new.bin", "fresh").ok());
  EXPECT_EQ(*ReadFileBytes(dir + "/target"), "keep");
}

TEST(FileIoTest, ReadingAFifoFailsAtOnceInsteadOfBlocking) {
  const std::string dir = Scratch("fifo_read");
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::string> bytes = ReadFileBytes(dir + "/fifo");
  EXPECT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("FIFO"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(ReadFileBytes(dir).ok());  // a directory
  EXPECT_EQ(ReadFileBytes(dir + "/missing").status().code(),
            StatusCode::kNotFound);
}

TEST(FileIoTest, OutputChecksBeforeAnyWork) {
  const std::string dir = Scratch("checks");
  { std::ofstream(dir + "/file") << "x"; }
  EXPECT_TRUE(CheckOutputFile(dir + "/new.json", "--trace").ok());
  EXPECT_TRUE(CheckOutputFile(dir + "/file", "--trace").ok());
  Status missing = CheckOutputFile(dir + "/no/such/t.json", "--trace");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("--trace"), std::string::npos);
  EXPECT_FALSE(CheckOutputFile(dir + "/file/t.json", "--trace").ok());
  EXPECT_FALSE(CheckOutputFile("/dev/null", "-o").ok());
  EXPECT_FALSE(CheckOutputFile(dir, "-o").ok());
  EXPECT_TRUE(CheckOutputDir(dir, "--save").ok());
  EXPECT_TRUE(CheckOutputDir(dir + "/a/b/c", "--save").ok());  // can be created
  EXPECT_FALSE(CheckOutputDir(dir + "/file", "--save").ok());
  EXPECT_FALSE(CheckOutputDir(dir + "/file/sub", "--save").ok());
}

}  // namespace
}  // namespace parex
