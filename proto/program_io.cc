#include "proto/program_io.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "base/logging.h"

namespace parex {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Collects protobuf's text-format parse errors with their line and column.
class TextErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (!first_.empty()) return;
    first_ = "line " + std::to_string(line + 1) + ", column " +
             std::to_string(column + 1) + ": " + message;
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

void ProtobufLog(google::protobuf::LogLevel level, const char* file, int line,
                 const std::string& message) {
  // parex reports every parse failure itself, naming the file; protobuf's
  // own lines are details for -vv.
  const std::string text = std::string("libprotobuf ") + file + ":" +
                           std::to_string(line) + ": " + message;
  if (level >= google::protobuf::LOGLEVEL_FATAL) {
    LogError(Subsystem::kGraph, text);
  } else {
    LogDebug(Subsystem::kGraph, text);
  }
}

}  // namespace

void RouteProtobufLogging() {
  static std::once_flag once;
  std::call_once(once, [] { google::protobuf::SetLogHandler(&ProtobufLog); });
}

StatusOr<proto::ProgramDesc> ParseProgramBinary(const std::string& bytes,
                                                const std::string& source) {
  RouteProtobufLogging();
  proto::ProgramDesc program;
  if (bytes.empty()) {
    return DataLoss("program '" + source + "': file is empty");
  }
  if (!program.ParsePartialFromString(bytes)) {
    return DataLoss("program '" + source +
                    "': not a ProgramDesc protobuf (truncated or corrupt, " +
                    std::to_string(bytes.size()) + " bytes)");
  }
  if (!program.IsInitialized()) {
    return DataLoss("program '" + source + "': missing required fields: " +
                    program.InitializationErrorString());
  }
  return program;
}

StatusOr<proto::ProgramDesc> ParseProgramText(const std::string& text,
                                              const std::string& source) {
  RouteProtobufLogging();
  proto::ProgramDesc program;
  google::protobuf::TextFormat::Parser parser;
  TextErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &program)) {
    return InvalidArgument(
        "program '" + source + "': " +
        (errors.first().empty() ? "text parse failed" : errors.first()));
  }
  return program;
}

std::string SerializeProgramBinary(const proto::ProgramDesc& program) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    out.SetSerializationDeterministic(true);
    program.SerializeToCodedStream(&out);
  }
  return bytes;
}

std::string SerializeProgramText(const proto::ProgramDesc& program) {
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(program, &text);
  return text;
}

StatusOr<proto::ProgramDesc> ReadProgramFile(const std::string& path) {
  bool text = EndsWith(path, ".pbtxt") || EndsWith(path, ".txt");
  return ReadProgramFile(path,
                         text ? ProgramFormat::kText : ProgramFormat::kBinary);
}

StatusOr<proto::ProgramDesc> ReadProgramFile(const std::string& path,
                                             ProgramFormat format) {
  PAREX_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  if (format == ProgramFormat::kText) return ParseProgramText(bytes, path);
  return ParseProgramBinary(bytes, path);
}

Status WriteProgramFile(const std::string& path,
                        const proto::ProgramDesc& program,
                        ProgramFormat format) {
  if (!program.IsInitialized()) {
    return InvalidArgument(
        "program for '" + path +
        "' misses required fields: " + program.InitializationErrorString());
  }
  return WriteFileBytes(path, format == ProgramFormat::kText
                                  ? SerializeProgramText(program)
                                  : SerializeProgramBinary(program));
}

}  // namespace parex
