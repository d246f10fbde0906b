// YAML -> LocalJobCacheOptions (the only YAML in the local backend). yaml-cpp's throwing calls
// stay inside the try block of ParseLocalJobCacheOptions.
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "halite/jobs/local_job_cache.h"

namespace halite::jobs {
namespace {

// Appends a problem and returns nullopt unless `node` is an integer scalar in [min, max].
std::optional<std::int64_t> ReadInt(const YAML::Node& node, std::string_view key, std::int64_t min,
                                    std::int64_t max, std::vector<std::string>& problems) {
  std::string range = "between ";
  range.append(std::to_string(min)).append(" and ").append(std::to_string(max));
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

Result<LocalJobCacheOptions> ParseLocalJobCacheOptions(const JobCacheContext& context,
                                                       const YAML::Node& node) {
  LocalJobCacheOptions options;
  options.cachedir = context.cachedir;
  std::vector<std::string> problems;
  if (context.cachedir.empty()) problems.push_back("cachedir: must be set");
  try {
    if (node.IsDefined() && !node.IsNull()) {
      if (!node.IsMap()) {
        problems.push_back("options must be a map");
      } else {
        for (const auto& item : node) {
          const std::string key = item.first.IsScalar() ? item.first.Scalar() : "";
          const YAML::Node& value = item.second;
          if (key == "batch_max") {
            if (auto n = ReadInt(value, key, 1, 1'000'000, problems)) {
              options.batch_max = static_cast<std::size_t>(*n);
            }
          } else if (key == "max_delay_ms") {
            if (auto n = ReadInt(value, key, 0, 10'000, problems)) {
              options.max_delay = std::chrono::milliseconds(*n);
            }
          } else if (key == "io_threads") {
            if (auto n = ReadInt(value, key, 1, 64, problems)) {
              options.io_threads = static_cast<std::size_t>(*n);
            }
          } else if (key == "fsync_mode") {
            const std::string mode = value.IsScalar() ? value.Scalar() : "";
            if (mode == "syncfs") {
              options.fsync_mode = LocalJobCacheOptions::FsyncMode::kSyncfs;
            } else if (mode == "per_file") {
              options.fsync_mode = LocalJobCacheOptions::FsyncMode::kPerFile;
            } else {
              problems.push_back("fsync_mode: '" + mode + "' must be 'syncfs' or 'per_file'");
            }
          } else {
            problems.push_back("unknown key '" + key + "'");
          }
        }
      }
    }
  } catch (const YAML::Exception& e) {
    problems.push_back("cannot be read: " + e.msg);
  }
  if (!problems.empty()) {
    std::string message = "local_cache options:";
    for (std::size_t i = 0; i < problems.size(); ++i) {
      message += (i == 0 ? " " : "; ") + problems[i];
    }
    return Error::InvalidArgument(std::move(message));
  }
  return options;
}

Result<std::unique_ptr<JobCache>> CreateLocalJobCache(const JobCacheContext& context,
                                                      const YAML::Node& node) {
  HALITE_ASSIGN_OR_RETURN(LocalJobCacheOptions options, ParseLocalJobCacheOptions(context, node));
  HALITE_ASSIGN_OR_RETURN(std::unique_ptr<LocalJobCache> cache, LocalJobCache::Open(options));
  return std::unique_ptr<JobCache>(std::move(cache));
}

}  // namespace halite::jobs
