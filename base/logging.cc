#include "base/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <memory>
#include <mutex>

#include "base/config.h"

namespace parex {
namespace {

std::array<std::shared_ptr<spdlog::logger>, 6>& Loggers() {
  static std::once_flag once;
  static std::array<std::shared_ptr<spdlog::logger>, 6> loggers;
  std::call_once(once, [] {
    const char* names[] = {"graph", "kernel", "actor", "comm", "node", "app"};
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    auto level = spdlog::level::from_str(GetConfig("PAREX_LOG_LEVEL"));
    for (size_t i = 0; i < loggers.size(); ++i) {
      loggers[i] = std::make_shared<spdlog::logger>(names[i], sink);
      loggers[i]->set_level(level);
    }
  });
  return loggers;
}

spdlog::logger& Logger(Subsystem subsystem) {
  return *Loggers()[static_cast<size_t>(subsystem)];
}

}  // namespace

void LogDebug(Subsystem s, const std::string& m) { Logger(s).debug(m); }
void LogInfo(Subsystem s, const std::string& m) { Logger(s).info(m); }
void LogWarn(Subsystem s, const std::string& m) { Logger(s).warn(m); }
void LogError(Subsystem s, const std::string& m) { Logger(s).error(m); }

void SetLogLevel(const std::string& level) {
  for (auto& logger : Loggers())
    logger->set_level(spdlog::level::from_str(level));
}

}  // namespace parex
