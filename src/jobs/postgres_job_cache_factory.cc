// YAML -> PostgresJobCacheOptions (the only YAML in the PostgreSQL backend). yaml-cpp's throwing
// calls stay inside the try block of ParsePostgresJobCacheOptions.
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "halite/jobs/postgres_job_cache.h"

namespace halite::jobs {
namespace {

std::optional<std::int64_t> ReadInt(const YAML::Node& node, std::string_view key, std::int64_t min,
                                    std::int64_t max, std::vector<std::string>& problems) {
  const std::string range = "between " + std::to_string(min) + " and " + std::to_string(max);
  if (!node.IsScalar()) {
    problems.push_back(std::string(key) + ": must be an integer " + range);
    return std::nullopt;
  }
  const std::string& text = node.Scalar();
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    problems.push_back(std::string(key) + ": '" + text + "' is not an integer");
    return std::nullopt;
  }
  if (value < min || value > max) {
    problems.push_back(std::string(key) + ": " + text + " must be " + range);
    return std::nullopt;
  }
  return value;
}

}  // namespace

Result<PostgresJobCacheOptions> ParsePostgresJobCacheOptions(const JobCacheContext& context,
                                                             const YAML::Node& node) {
  PostgresJobCacheOptions options;
  options.master_id = context.master_id;
  std::vector<std::string> problems;
  try {
    if (!node.IsDefined() || node.IsNull()) {
      problems.push_back(
          "dsn: must be set (a libpq connection string, e.g. "
          "'host=127.0.0.1 port=5432 dbname=salt user=halite')");
    } else if (!node.IsMap()) {
      problems.push_back("options must be a map");
    } else {
      for (const auto& item : node) {
        const std::string key = item.first.IsScalar() ? item.first.Scalar() : "";
        const YAML::Node& value = item.second;
        if (key == "dsn") {
          if (value.IsScalar() && !value.Scalar().empty()) {
            options.dsn = value.Scalar();
          } else {
            problems.push_back("dsn: must be a non-empty string");
          }
        } else if (key == "schema") {
          options.schema = value.IsScalar() ? value.Scalar() : "";
        } else if (key == "batch_max") {
          if (auto n = ReadInt(value, key, 1, 100'000, problems)) {
            options.batch_max = static_cast<std::size_t>(*n);
          }
        } else if (key == "pool_size") {
          if (auto n = ReadInt(value, key, 1, 64, problems)) {
            options.pool_size = static_cast<std::size_t>(*n);
          }
        } else if (key == "connect_timeout_ms") {
          if (auto n = ReadInt(value, key, 100, 600'000, problems)) {
            options.connect_timeout = std::chrono::milliseconds(*n);
          }
        } else if (key == "operation_timeout_ms") {
          if (auto n = ReadInt(value, key, 100, 600'000, problems)) {
            options.operation_timeout = std::chrono::milliseconds(*n);
          }
        } else if (key == "retry_for_seconds") {
          if (auto n = ReadInt(value, key, 0, 86'400, problems)) {
            options.retry_for = std::chrono::seconds(*n);
          }
        } else if (key == "clean_chunk") {
          if (auto n = ReadInt(value, key, 1, 100'000, problems)) {
            options.clean_chunk = static_cast<std::size_t>(*n);
          }
        } else {
          problems.push_back("unknown key '" + key + "'");
        }
      }
      if (options.dsn.empty() && !node["dsn"]) problems.push_back("dsn: must be set");
    }
  } catch (const YAML::Exception& e) {
    problems.push_back("cannot be read: " + e.msg);
  }
  if (!problems.empty()) {
    std::string message = "postgres options:";
    for (std::size_t i = 0; i < problems.size(); ++i) {
      message += (i == 0 ? " " : "; ") + problems[i];
    }
    return Error::InvalidArgument(std::move(message));
  }
  return options;
}

Result<std::unique_ptr<JobCache>> CreatePostgresJobCache(const JobCacheContext& context,
                                                         const YAML::Node& node) {
  HALITE_ASSIGN_OR_RETURN(PostgresJobCacheOptions options,
                          ParsePostgresJobCacheOptions(context, node));
  HALITE_ASSIGN_OR_RETURN(std::unique_ptr<PostgresJobCache> cache, PostgresJobCache::Open(options));
  return std::unique_ptr<JobCache>(std::move(cache));
}

}  // namespace halite::jobs
