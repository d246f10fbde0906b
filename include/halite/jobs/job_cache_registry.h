// The job cache backends by name ("local_cache", "postgres"), filled by one explicit call to
// RegisterBuiltinJobCaches. Only daemon/ (and tests) see this; handlers get a JobCache&.
// Register is not thread-safe: fill the registry at start-up, then share it read-only.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"
#include "halite/jobs/job_cache.h"

namespace halite::jobs {

// What every backend may need besides its own options.
struct JobCacheContext {
  std::filesystem::path cachedir;  // the master's cachedir (local_cache writes <cachedir>/jobs)
  std::string master_id;
};

// Validates `options` (the backend's own YAML map; null means defaults) and creates the
// backend. Errors list every problem found.
using JobCacheFactory = std::function<Result<std::unique_ptr<JobCache>>(
    const JobCacheContext& context, const YAML::Node& options)>;

class JobCacheRegistry {
 public:
  // Registering a name twice is a bug (HALITE_CHECK).
  void Register(std::string name, JobCacheFactory factory);

  // Error::NotFound naming the known backends when `name` is not registered; otherwise
  // whatever the factory returns.
  Result<std::unique_ptr<JobCache>> Create(std::string_view name, const JobCacheContext& context,
                                           const YAML::Node& options) const;

  // Sorted.
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, JobCacheFactory, std::less<>> factories_;
};

// The whole list of built-in backends: "local_cache" (and "postgres" when compiled in).
void RegisterBuiltinJobCaches(JobCacheRegistry& registry);

}  // namespace halite::jobs
