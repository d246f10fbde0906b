// YAML -> LocalJobCacheOptions (the only YAML in the local backend), read through
// config::YamlMapReader.
#include "backend_options.h"
#include "halite/jobs/local_job_cache.h"

namespace halite::jobs {

Result<LocalJobCacheOptions> ParseLocalJobCacheOptions(const JobCacheContext& context,
                                                       const YAML::Node& node) {
  LocalJobCacheOptions options;
  options.cachedir = context.cachedir;
  config::YamlMapReader reader(node, "job_cache.");
  if (context.cachedir.empty()) reader.AddProblem("cachedir", "must be set");
  reader.ReadInt("batch_max", options.batch_max, 1, 1'000'000);
  reader.ReadDuration("max_delay_ms", options.max_delay, 0, 10'000);
  reader.ReadInt("io_threads", options.io_threads, 1, 64);
  std::string mode;
  if (reader.ReadString("fsync_mode", mode)) {
    if (mode == "syncfs") {
      options.fsync_mode = LocalJobCacheOptions::FsyncMode::kSyncfs;
    } else if (mode == "per_file") {
      options.fsync_mode = LocalJobCacheOptions::FsyncMode::kPerFile;
    } else {
      reader.AddProblem("fsync_mode", "'" + mode + "' must be 'syncfs' or 'per_file'");
    }
  }
  HALITE_RETURN_IF_ERROR(FinishBackendOptions(reader, "local_cache"));
  return options;
}

Result<std::unique_ptr<JobCache>> CreateLocalJobCache(const JobCacheContext& context,
                                                      const YAML::Node& node) {
  HALITE_ASSIGN_OR_RETURN(LocalJobCacheOptions options, ParseLocalJobCacheOptions(context, node));
  HALITE_ASSIGN_OR_RETURN(std::unique_ptr<LocalJobCache> cache, LocalJobCache::Open(options));
  return std::unique_ptr<JobCache>(std::move(cache));
}

}  // namespace halite::jobs
