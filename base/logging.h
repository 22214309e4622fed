// Logging with a subsystem tag (spdlog underneath). Only base/logging.cc
// includes spdlog, so headers stay cheap.
#pragma once

#include <string>

namespace parex {

enum class Subsystem { kGraph, kKernel, kActor, kComm, kNode, kApp };

void LogDebug(Subsystem subsystem, const std::string& message);
void LogInfo(Subsystem subsystem, const std::string& message);
void LogWarn(Subsystem subsystem, const std::string& message);
void LogError(Subsystem subsystem, const std::string& message);

// Overrides PAREX_LOG_LEVEL: trace, debug, info, warn, error or off.
void SetLogLevel(const std::string& level);

}  // namespace parex
