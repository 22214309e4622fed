// Issue 11, acceptance 2: every subcommand against a matrix of bad inputs
// (empty, truncated, random, wrong-message, huge-dimension and wrong-dtype
// files; bad arguments; unwritable and special output paths). Each case must
// exit 1 or 2 with exactly one line on stderr, "parex <cmd>: error: ..."
// naming the file, op, variable or flag; it must leave the working directory
// as it was (no partial or replaced output) and must not crash or hang (the
// runner's timeout(1) and ctest's TIMEOUT).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "apps/cli/npy.h"
#include "apps/models.h"
#include "base/file_io.h"
#include "kernels/io/model_io.h"
#include "kernels/io/tensor_io.h"
#include "kernels/reference_executor.h"
#include "proto/tensor_record.h"
#include "tests/apps/cli/cli_test_util.h"

namespace parex::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Case {
  std::vector<std::string> args;
  std::string names;  // what the one error line must name
};

// name -> (kind, size, link target) of everything under `dir`.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> snap;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().lexically_relative(dir).string();
    if (name == ".stdout" || name == ".stderr") continue;
    struct stat st;
    lstat(e.path().c_str(), &st);
    std::string what = std::to_string(st.st_mode & S_IFMT) + ":" +
                       std::to_string(S_ISREG(st.st_mode) ? st.st_size : 0) +
                       ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                       std::to_string(st.st_mtim.tv_nsec);
    if (S_ISLNK(st.st_mode)) what += "->" + fs::read_symlink(e.path()).string();
    snap[name] = what;
  }
  return snap;
}

void ExpectCleanFailure(const Case& c, const std::string& dir) {
  std::string what = "parex";
  for (const std::string& a : c.args) what += " " + a;
  SCOPED_TRACE(what);
  const auto before = Snapshot(dir);
  CliRun run = RunParex(c.args, dir);
  EXPECT_TRUE(run.exit_code == 1 || run.exit_code == 2)
      << "exit " << run.exit_code << "\n"
      << run.err;
  // One line: "parex <cmd>: error: ..." (CLI11's own usage errors print a
  // second line with the --help hint; those exit 2 and name the flag too).
  ASSERT_FALSE(run.err.empty());
  const std::string first = run.err.substr(0, run.err.find('\n'));
  if (run.exit_code == 1 || first.find("error:") != std::string::npos) {
    EXPECT_THAT(first, HasSubstr("parex " + c.args[0] + ": error: "));
  }
  const size_t lines = std::count(run.err.begin(), run.err.end(), '\n');
  EXPECT_LE(lines, run.exit_code == 2 ? 2u : 1u) << run.err;
  EXPECT_THAT(first, HasSubstr(c.names)) << run.err;
  EXPECT_EQ(Snapshot(dir), before) << "the failed command changed " << dir;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen() & 0xff);
  return s;
}

// A version 1.0 .npy file of fp32 with the given shape text and data bytes.
std::string NpyWithShape(const std::string& shape, const std::string& data) {
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
  header.append(118 - header.size(), ' ');
  header += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) +
         std::string(1, char(header.size())) + std::string(1, '\0') + header +
         data;
}

// A digits-MLP inference model (image [-1, 64] -> softmax) saved by parex in
// `dir`/model, plus a set of bad files beside it.
class BadInputMatrix : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One directory per process: ctest runs the cases of this suite at once.
    dir_ = ScratchDir("bad_input_matrix_" + std::to_string(getpid()));
    StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kDigitsMlp);
    ASSERT_TRUE(ex.ok());
    Scope scope;
    ReferenceExecutor exec;
    ASSERT_TRUE(exec.Run(ex->startup, &scope, {}, {}).ok());
    Program pruned;
    ASSERT_TRUE(SaveInferenceModel(dir_ + "/model", {ex->input},
                                   {ex->prediction}, ex->main, scope, &pruned)
                    .ok());
    input_ = ex->input;
    pruned_ = std::make_unique<Program>(std::move(pruned));
    MakeFiles();
  }

  static void MakeFiles() {
    const std::string model = ReadFile(dir_ + "/model/__model__");
    // Programs.
    WriteBytes(dir_ + "/empty.pdmodel", "");
    WriteBytes(dir_ + "/truncated.pdmodel", model.substr(0, model.size() / 2));
    WriteBytes(dir_ + "/random.pdmodel", RandomBytes(4096, 7));
    {
      // Another message: a tensor record parses as no ProgramDesc.
      std::ostringstream out;
      ASSERT_TRUE(WriteTensor(out, Tensor(DType::kFP32, {3, 4})).ok());
      WriteBytes(dir_ + "/wrong_message.pdmodel", out.str());
    }
    {
      proto::ProgramDesc desc = pruned_->proto();
      for (auto& var : *desc.mutable_blocks(0)->mutable_vars()) {
        if (var.name() != input_) continue;
        auto* dims = var.mutable_type()
                         ->mutable_lod_tensor()
                         ->mutable_tensor()
                         ->mutable_dims();
        dims->Clear();
        dims->Add(int64_t{1} << 40);
        dims->Add(int64_t{1} << 40);
      }
      ASSERT_TRUE(Program(desc).Save(dir_ + "/huge_dim.pdmodel").ok());
    }
    {
      proto::ProgramDesc desc = pruned_->proto();
      desc.mutable_blocks(0)->set_parent_idx(3);
      ASSERT_TRUE(Program(desc).Save(dir_ + "/bad_root.pdmodel").ok());
    }
    {
      proto::ProgramDesc desc = pruned_->proto();
      auto* b1 = desc.add_blocks();
      b1->set_idx(1);
      b1->set_parent_idx(2);
      auto* b2 = desc.add_blocks();
      b2->set_idx(2);
      b2->set_parent_idx(1);
      ASSERT_TRUE(Program(desc).Save(dir_ + "/cycle.pdmodel").ok());
    }
    {
      // An attribute out of the kernel's range: mul's x_num_col_dims.
      proto::ProgramDesc desc = pruned_->proto();
      for (auto& op : *desc.mutable_blocks(0)->mutable_ops()) {
        if (op.type() != "mul") continue;
        for (auto& attr : *op.mutable_attrs()) {
          if (attr.name() == "x_num_col_dims") attr.set_i(1000000);
        }
      }
      ASSERT_TRUE(Program(desc).Save(dir_ + "/bad_attr.pdmodel").ok());
    }
    {
      // An op that overwrites a parameter it reads without being in-place.
      proto::ProgramDesc desc = pruned_->proto();
      for (auto& op : *desc.mutable_blocks(0)->mutable_ops()) {
        if (op.type() != "mul") continue;
        std::string w;
        for (const auto& in : op.inputs()) {
          if (in.parameter() == "Y") w = in.arguments(0);
        }
        for (auto& out : *op.mutable_outputs()) {
          if (out.parameter() == "Out") out.set_arguments(0, w);
        }
        break;
      }
      ASSERT_TRUE(Program(desc).Save(dir_ + "/alias.pdmodel").ok());
    }
    {
      // The feed op's column leaves a gap (columns 0..4 have no feed).
      proto::ProgramDesc desc = pruned_->proto();
      for (auto& op : *desc.mutable_blocks(0)->mutable_ops()) {
        if (op.type() != "feed") continue;
        for (auto& attr : *op.mutable_attrs()) {
          if (attr.name() == "col") attr.set_i(5);
        }
      }
      ASSERT_TRUE(Program(desc).Save(dir_ + "/feed_gap.pdmodel").ok());
    }
    {
      // An op type with a newline and an escape sequence in it.
      proto::ProgramDesc desc = pruned_->proto();
      desc.mutable_blocks(0)->mutable_ops(1)->set_type("evil\n\x1b[2Jop");
      ASSERT_TRUE(Program(desc).Save(dir_ + "/control_chars.pdmodel").ok());
    }
    // Model directories with one bad parameter file each.
    std::string param;
    for (const std::string& name : PersistableTensorNames(*pruned_))
      param = name;
    auto model_with = [&](const std::string& name, const std::string& bytes) {
      const std::string d = dir_ + "/" + name;
      fs::create_directories(d);
      fs::copy(
          dir_ + "/model", d,
          fs::copy_options::recursive | fs::copy_options::overwrite_existing);
      WriteBytes(d + "/" + param, bytes);
    };
    const std::string good = ReadFile(dir_ + "/model/" + param);
    model_with("param_empty", "");
    model_with("param_truncated", good.substr(0, good.size() - 5));
    model_with("param_random", RandomBytes(good.size(), 11));
    {
      std::ostringstream out;
      TensorRecordHeader h;
      h.dtype = DType::kFP32;
      h.dims = {int64_t{1} << 31, int64_t{1} << 31, 16};
      ASSERT_TRUE(WriteTensorRecordHeader(out, h).ok());
      model_with("param_huge", out.str() + "tiny");
    }
    {
      std::ostringstream out;
      Tensor wrong(DType::kInt64, {1});
      ASSERT_TRUE(WriteTensor(out, wrong).ok());
      model_with("param_dtype", out.str());
    }
    // A record whose TensorDesc is empty: protobuf's parser would print its
    // own "missing required fields" line before parex's error.
    model_with("param_no_desc", std::string(4 + 8 + 4 + 4, '\0'));
    param_ = param;
    // .npy inputs.
    WriteBytes(dir_ + "/empty.npy", "");
    const std::string npy = SerializeNpy(Tensor(DType::kFP32, {2, 64}));
    WriteBytes(dir_ + "/truncated.npy", npy.substr(0, npy.size() - 9));
    WriteBytes(dir_ + "/header_only.npy", npy.substr(0, 40));
    WriteBytes(dir_ + "/random.npy", RandomBytes(300, 3));
    WriteBytes(dir_ + "/wrong_message.npy", model);
    // An extent above 2^48, and extents of 2^32 whose product wraps 64 bits
    // to 0 (16 bytes of data then "suffice").
    WriteBytes(dir_ + "/huge_dim.npy",
               NpyWithShape("4611686018427387904, 4", "0123456789abcdef"));
    WriteBytes(dir_ + "/wrapping_dim.npy",
               NpyWithShape("4294967296, 4294967296, 4", "0123456789abcdef"));
    ASSERT_TRUE(
        WriteNpy(dir_ + "/int_input.npy", Tensor(DType::kInt64, {2, 64})).ok());
    ASSERT_TRUE(
        WriteNpy(dir_ + "/good.npy", Tensor(DType::kFP32, {2, 64})).ok());
    ASSERT_TRUE(
        WriteNpy(dir_ + "/wrong_shape.npy", Tensor(DType::kFP32, {2, 63}))
            .ok());
    // Datasets: idx counts whose product wraps 64 bits (zlib reads a file
    // that is not gzip as it is), and a FIFO where a CSV should be.
    fs::create_directories(dir_ + "/fashion_bad");
    const std::string idx_header(
        "\x00\x00\x08\x03\xff\xff\xff\xff\xff\xff\xff\xff"
        "\xff\xff\xff\xff",
        16);
    for (const char* split : {"train", "t10k"}) {
      WriteBytes(dir_ + "/fashion_bad/" + split + "-images-idx3-ubyte.gz",
                 idx_header);
      WriteBytes(dir_ + "/fashion_bad/" + split + "-labels-idx1-ubyte.gz",
                 std::string("\x00\x00\x08\x01\x00\x00\x00\x00", 8));
    }
    fs::create_directories(dir_ + "/data_fifo");
    ASSERT_EQ(mkfifo((dir_ + "/data_fifo/digits.csv.gz").c_str(), 0644), 0);
    // The digits CSV empty, a truncated gzip stream, random bytes, a field
    // that is no number, and rows of the wrong width.
    const std::map<std::string, std::string> digits = {
        {"data_empty", ""},
        {"data_truncated_gz",
         std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x33\x30", 12)},
        {"data_random", RandomBytes(2000, 5)},
        {"data_not_a_number", "1,abc\n"},
        {"data_wrong_width", "1,2,3\n4,5,6\n"},
    };
    for (const auto& [name, bytes] : digits) {
      fs::create_directories(dir_ + "/" + name);
      WriteBytes(dir_ + "/" + name + "/digits.csv.gz", bytes);
    }
    // Special and unwritable output paths.
    ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0644), 0);
    ASSERT_EQ(mkfifo((dir_ + "/fifo.npy").c_str(), 0644), 0);
    fs::create_symlink("good.npy", dir_ + "/link.json");
    WriteBytes(dir_ + "/plain_file", "x");
    fs::create_directories(dir_ + "/a_dir.json");
    fs::create_directories(dir_ + "/out_special");
    ASSERT_EQ(mkfifo((dir_ + "/out_special/softmax_0.tmp_0.npy").c_str(), 0644),
              0);
  }

  static std::string dir_, input_, param_;
  static std::unique_ptr<Program> pruned_;
};

std::string BadInputMatrix::dir_, BadInputMatrix::input_,
    BadInputMatrix::param_;
std::unique_ptr<Program> BadInputMatrix::pruned_;

TEST_F(BadInputMatrix, TheGoodModelRuns) {
  // The matrix's base is sound: the same model and input succeed.
  CliRun run = RunParex(
      {"infer", "--model", "model", "--input", input_ + "=good.npy"}, dir_);
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

TEST_F(BadInputMatrix, Programs) {
  const std::string in = input_ + "=good.npy";
  for (const std::string cmd : {"inspect", "graph", "infer"}) {
    for (const auto& [file, names] :
         std::vector<std::pair<std::string, std::string>>{
             {"empty.pdmodel", "empty.pdmodel"},
             {"truncated.pdmodel", "truncated.pdmodel"},
             {"random.pdmodel", "random.pdmodel"},
             {"wrong_message.pdmodel", "wrong_message.pdmodel"},
             {"huge_dim.pdmodel", "variable '" + input_ + "'"},
             {"bad_root.pdmodel", "block 0"},
             {"cycle.pdmodel", "block 1"},
             {"bad_attr.pdmodel", "'mul'"},
             {"alias.pdmodel", "persistable variable"},
             {"feed_gap.pdmodel", "feed column 0"},
             {"missing.pdmodel", "missing.pdmodel"},
             {"fifo", "fifo"},
             {"a_dir.json", "a_dir.json"},
         }) {
      std::vector<std::string> args;
      if (cmd == "inspect") args = {"inspect", file};
      if (cmd == "graph") args = {"graph", file, "-o", "g.dot"};
      if (cmd == "infer")
        args = {"infer",           "--model", file, "--params",
                "model/" + param_, "--input", in};
      ExpectCleanFailure({args, names}, dir_);
    }
  }
  // inspect lists unknown ops without failing; the others name it on one line.
  ExpectCleanFailure({{"graph", "control_chars.pdmodel", "-o", "g.dot"},
                      "evil\\x0a\\x1b[2Jop"},
                     dir_);
  ExpectCleanFailure({{"infer", "--model", "control_chars.pdmodel", "--params",
                       "model/" + param_, "--input", in},
                      "evil\\x0a\\x1b[2Jop"},
                     dir_);
}

TEST_F(BadInputMatrix, ParameterFiles) {
  const std::string in = input_ + "=good.npy";
  for (const std::string model :
       {"param_empty", "param_truncated", "param_random", "param_huge",
        "param_dtype", "param_no_desc"}) {
    ExpectCleanFailure({{"infer", "--model", model, "--input", in}, param_},
                       dir_);
  }
}

TEST_F(BadInputMatrix, NpyInputs) {
  for (const auto& [file, names] :
       std::vector<std::pair<std::string, std::string>>{
           {"empty.npy", "empty.npy"},
           {"truncated.npy", "truncated.npy"},
           {"header_only.npy", "header_only.npy"},
           {"random.npy", "random.npy"},
           {"wrong_message.npy", "wrong_message.npy"},
           {"huge_dim.npy", "huge_dim.npy"},
           {"wrapping_dim.npy", "wrapping_dim.npy"},
           {"int_input.npy", input_},
           {"wrong_shape.npy", input_},
           {"missing.npy", "missing.npy"},
           {"fifo", "fifo"},
           {"a_dir.json", "a_dir.json"},
       }) {
    ExpectCleanFailure(
        {{"infer", "--model", "model", "--input", input_ + "=" + file}, names},
        dir_);
  }
}

TEST_F(BadInputMatrix, Arguments) {
  const std::vector<Case> cases = {
      {{"train", "--epochs", "0"}, "--epochs"},
      {{"train", "--epochs", "-3"}, "--epochs"},
      {{"train", "--epochs", "nan"}, "--epochs"},
      {{"train", "--batch", "0"}, "--batch"},
      {{"train", "--batch", "-64"}, "--batch"},
      {{"train", "--batch", "1000000000"}, "--batch"},
      {{"train", "--batch", "1", "--places", "cpu:2"}, "--batch"},
      {{"train", "--lr", "0"}, "--lr"},
      {{"train", "--lr", "-0.1"}, "--lr"},
      {{"train", "--lr", "nan"}, "--lr"},
      {{"train", "--lr", "inf"}, "--lr"},
      {{"train", "--trace", "t.json", "--trace-steps", "0"}, "--trace-steps"},
      {{"train", "--trace", "t.json", "--trace-from", "-1"}, "--trace-from"},
      {{"train", "--places", "cpu:0"}, "--places"},
      {{"train", "--places", "cpu:-1"}, "--places"},
      {{"train", "--places", "tpu:1"}, "--places"},
      {{"train", "--places", "cpu:99999999999999999999"}, "--places"},
      {{"train", "--model", "resnet"}, "resnet"},
      {{"train", "--mode", "ring"}, "--mode"},
      {{"train", "--data-dir", "nowhere"}, "nowhere"},
      {{"train", "--data-dir", "data_fifo"}, "data_fifo/digits.csv.gz"},
      {{"train", "--data-dir", "data_empty"}, "data_empty/digits.csv.gz"},
      {{"train", "--data-dir", "data_truncated_gz"},
       "data_truncated_gz/digits.csv.gz"},
      {{"train", "--data-dir", "data_random"}, "data_random/digits.csv.gz"},
      {{"train", "--data-dir", "data_not_a_number"},
       "data_not_a_number/digits.csv.gz"},
      {{"train", "--data-dir", "data_wrong_width"},
       "data_wrong_width/digits.csv.gz"},
      {{"train", "--model", "fashion_mlp", "--fashion-dir", "fashion_bad"},
       "fashion_bad/train-images-idx3-ubyte.gz"},
      {{"infer", "--model", "model", "--input", input_ + "=good.npy",
        "--places", "cpu:"},
       "--places"},
      {{"infer", "--model", "model", "--input", "=good.npy"}, "NAME=FILE.npy"},
      {{"infer", "--model", "model", "--input", "nofeed=good.npy"}, "nofeed"},
      {{"graph", "--model", "digits_mlp", "--format", "xml", "-o", "g.xml"},
       "--format"},
      {{"graph", "--model", "digits_mlp", "--places", "cpu:0", "-o", "g.dot"},
       "--places"},
      {{"inspect"}, "path"},
      {{"inspect", "model", "--params", "nowhere.pdiparams"},
       "nowhere.pdiparams"},
  };
  for (const Case& c : cases) ExpectCleanFailure(c, dir_);
}

TEST_F(BadInputMatrix, OutputPaths) {
  const std::vector<std::string> infer = {"infer", "--model", "model",
                                          "--input", input_ + "=good.npy"};
  auto with = [](std::vector<std::string> a, std::vector<std::string> more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const std::vector<Case> cases = {
      // graph -o: a symlink, a FIFO, a device, a directory, a missing or
      // non-directory parent.
      {{"graph", "--model", "digits_mlp", "-o", "link.json"}, "link.json"},
      {{"graph", "--model", "digits_mlp", "--format", "dot", "-o", "fifo"},
       "fifo"},
      {{"graph", "--model", "digits_mlp", "--format", "dot", "-o", "/dev/null"},
       "/dev/null"},
      {{"graph", "--model", "digits_mlp", "-o", "a_dir.json"}, "a_dir.json"},
      {{"graph", "--model", "digits_mlp", "-o", "no/such/dir/g.dot"},
       "no/such/dir/g.dot"},
      {{"graph", "--model", "digits_mlp", "-o", "plain_file/g.dot"},
       "plain_file/g.dot"},
      // infer --output (a directory) and --trace.
      {with(infer, {"--output", "plain_file"}), "plain_file"},
      {with(infer, {"--output", "link.json"}), "link.json"},
      {with(infer, {"--output", "plain_file/sub"}), "plain_file/sub"},
      {with(infer, {"--output", "out_special"}), "softmax_0.tmp_0.npy"},
      {with(infer, {"--trace", "fifo"}), "fifo"},
      {with(infer, {"--trace", "a_dir.json"}), "a_dir.json"},
      {with(infer, {"--trace", "no/such/t.json"}), "no/such/t.json"},
      // train --save and --trace are checked before training starts.
      {{"train", "--save", "plain_file"}, "plain_file"},
      {{"train", "--save", "plain_file/model"}, "plain_file/model"},
      {{"train", "--trace", "link.json"}, "link.json"},
      {{"train", "--trace", "/dev/null"}, "/dev/null"},
      {{"train", "--trace", "no/such/t.json"}, "no/such/t.json"},
  };
  for (const Case& c : cases) ExpectCleanFailure(c, dir_);
}

}  // namespace
}  // namespace parex::testing
