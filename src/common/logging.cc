#include "halite/common/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <utility>

namespace halite {

std::optional<spdlog::level::level_enum> ParseLogLevel(std::string_view name) {
  if (name == "trace" || name == "garbage" || name == "all") return spdlog::level::trace;
  if (name == "debug" || name == "profile") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warning" || name == "warn") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  if (name == "critical") return spdlog::level::critical;
  if (name == "quiet") return spdlog::level::off;
  return std::nullopt;
}

Status SetUpLogging(const LogOptions& options) {
  auto level = ParseLogLevel(options.level);
  if (!level) return Error::InvalidArgument("unknown log level '" + options.level + "'");
  std::shared_ptr<spdlog::logger> logger;
  try {
    spdlog::drop(options.name);
    if (options.file.empty()) {
      logger = spdlog::stderr_color_mt(options.name);
    } else {
      logger = spdlog::basic_logger_mt(options.name, options.file);
    }
  } catch (const spdlog::spdlog_ex& e) {
    return Error::Unavailable(std::string("cannot set up logging: ") + e.what());
  }
  logger->set_level(*level);
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e [%^%l%$] [%t] %v");
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  return OkStatus();
}

std::optional<std::uint64_t> LogLimiter::Pass(std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mu_);
  if (logged_once_ && now - last_ < period_) {
    ++suppressed_;
    return std::nullopt;
  }
  logged_once_ = true;
  last_ = now;
  return std::exchange(suppressed_, 0);
}

std::string SuppressedSuffix(std::uint64_t suppressed) {
  if (suppressed == 0) return "";
  return " (" + std::to_string(suppressed) + " more like it since the last)";
}

std::string Printable(std::string_view text) {
  std::string out;
  for (unsigned char c : text.substr(0, 128)) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (text.size() > 128) out += "...";
  return out;
}

}  // namespace halite
