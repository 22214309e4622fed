#include "proto/program_io.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/paddle_models.h"

namespace parex {
namespace {

const std::string& kModels = testing::PaddleModelsDir();
const std::string kTmp = PAREX_TEST_TMP_DIR;

proto::ProgramDesc SmallProgram() {
  proto::ProgramDesc program;
  auto* block = program.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  auto* var = block->add_vars();
  var->set_name("x");
  var->mutable_type()->set_type(proto::VarType::LOD_TENSOR);
  auto* t = var->mutable_type()->mutable_lod_tensor()->mutable_tensor();
  t->set_data_type(proto::VarType::FP32);
  t->add_dims(-1);
  t->add_dims(13);
  auto* op = block->add_ops();
  op->set_type("scale");
  auto* in = op->add_inputs();
  in->set_parameter("X");
  in->add_arguments("x");
  auto* attr = op->add_attrs();
  attr->set_name("scale");
  attr->set_type(proto::FLOAT);
  attr->set_f(2.5f);
  program.mutable_version()->set_version(2001000);
  return program;
}

TEST(ProgramIoTest, BinaryRoundTripGivesIdenticalBytes) {
  std::string bytes = SerializeProgramBinary(SmallProgram());
  auto parsed = ParseProgramBinary(bytes, "mem");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(SerializeProgramBinary(*parsed), bytes);
  std::string path = kTmp + "/small.pdmodel";
  ASSERT_TRUE(WriteProgramFile(path, *parsed).ok());
  auto bytes_on_disk = ReadFileBytes(path);
  ASSERT_TRUE(bytes_on_disk.ok());
  EXPECT_EQ(*bytes_on_disk, bytes);
}

TEST(ProgramIoTest, BinaryTextBinaryRoundTrip) {
  proto::ProgramDesc program = SmallProgram();
  std::string text = SerializeProgramText(program);
  EXPECT_NE(text.find("type: \"scale\""), std::string::npos);
  auto back = ParseProgramText(text, "mem.pbtxt");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(SerializeProgramBinary(*back), SerializeProgramBinary(program));
  std::string path = kTmp + "/small.pbtxt";
  ASSERT_TRUE(WriteProgramFile(path, program, ProgramFormat::kText).ok());
  auto read = ReadProgramFile(path);  // format chosen by extension
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(SerializeProgramBinary(*read), SerializeProgramBinary(program));
}

TEST(ProgramIoTest, PaddleFilesReadAndWriteBackByteForByte) {
  PAREX_REQUIRE_PADDLE_MODELS();
  for (const char* file : {"/fit_a_line/__model__", "/mnist_mlp/__model__",
                           "/simple_model/model.pdmodel"}) {
    std::string path = kModels + file;
    auto original = ReadFileBytes(path);
    ASSERT_TRUE(original.ok()) << original.status().ToString();
    auto program = ReadProgramFile(path);
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    std::string written = SerializeProgramBinary(*program);
    EXPECT_EQ(written, *original) << path;
    // Through the text format and back, too.
    auto text = ParseProgramText(SerializeProgramText(*program), path);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(SerializeProgramBinary(*text), written) << path;
  }
}

TEST(ProgramIoTest, UnpackedAndPackedDimsBothParse) {
  // dims = [-1, 13] written packed (one length-delimited field 2).
  proto::VarType::TensorDesc desc;
  std::string packed;
  packed.push_back(0x08);  // data_type, varint
  packed.push_back(5);     // FP32
  packed.push_back(0x12);  // field 2, length-delimited
  std::string payload = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x0d";
  packed.push_back(static_cast<char>(payload.size()));
  packed += payload;
  ASSERT_TRUE(desc.ParseFromString(packed));
  ASSERT_EQ(desc.dims_size(), 2);
  EXPECT_EQ(desc.dims(0), -1);
  EXPECT_EQ(desc.dims(1), 13);
  // parex writes them unpacked, like Paddle.
  std::string written = desc.SerializeAsString();
  EXPECT_EQ(written[2], 0x10);  // field 2, varint: one tag per element
}

TEST(ProgramIoTest, TruncatedProgramIsAnErrorNamingTheFile) {
  PAREX_REQUIRE_PADDLE_MODELS();
  std::string path = kModels + "/mnist_mlp/__model__";
  auto bytes = ReadFileBytes(path);
  ASSERT_TRUE(bytes.ok());
  std::string cut = bytes->substr(0, bytes->size() / 2);
  auto parsed = ParseProgramBinary(cut, "cut/__model__");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(parsed.status().message().find("cut/__model__"), std::string::npos);
}

TEST(ProgramIoTest, RandomBytesAndEmptyFilesAreErrors) {
  std::string junk;
  uint32_t x = 12345;
  for (int i = 0; i < 4096; ++i) {
    x = x * 1664525u + 1013904223u;
    junk.push_back(static_cast<char>(x >> 24));
  }
  auto parsed = ParseProgramBinary(junk, "junk.pdmodel");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("junk.pdmodel"), std::string::npos);
  EXPECT_FALSE(ParseProgramBinary("", "empty").ok());
  auto missing = ReadProgramFile(kTmp + "/no_such_file.pdmodel");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no_such_file"), std::string::npos);
}

TEST(ProgramIoTest, TextParseErrorNamesLine) {
  auto parsed =
      ParseProgramText("blocks {\n  idx: 0\n  bogus: 1\n}\n", "bad.pbtxt");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("bad.pbtxt"), std::string::npos);
  EXPECT_NE(parsed.status().message().find("line 3"), std::string::npos);
}

}  // namespace
}  // namespace parex
