// Reading and writing program files: Paddle's binary ProgramDesc (`__model__`,
// `*.pdmodel`) and protobuf's text format for humans.
#pragma once

#include <string>

#include "base/file_io.h"
#include "base/status.h"
#include "proto/framework.pb.h"

namespace parex {

namespace proto = ::paddle::framework::proto;

enum class ProgramFormat { kBinary, kText };

// Parses a binary ProgramDesc. `source` names the bytes' origin in errors.
StatusOr<proto::ProgramDesc> ParseProgramBinary(const std::string& bytes,
                                                const std::string& source);
StatusOr<proto::ProgramDesc> ParseProgramText(const std::string& text,
                                              const std::string& source);
// Serialises deterministically: the same program always gives the same bytes.
std::string SerializeProgramBinary(const proto::ProgramDesc& program);
std::string SerializeProgramText(const proto::ProgramDesc& program);

// Reads a program file; kText when the name ends in .pbtxt or .txt.
StatusOr<proto::ProgramDesc> ReadProgramFile(const std::string& path);
StatusOr<proto::ProgramDesc> ReadProgramFile(const std::string& path,
                                             ProgramFormat format);
Status WriteProgramFile(const std::string& path,
                        const proto::ProgramDesc& program,
                        ProgramFormat format = ProgramFormat::kBinary);

// Sends libprotobuf's own log lines to parex's log (debug level) instead of
// stderr; the parse functions here call it, so does the tensor-record reader.
void RouteProtobufLogging();

// ReadFileBytes / WriteFileBytes (regular files only; atomic writes) come
// from base/file_io.h.

}  // namespace parex
