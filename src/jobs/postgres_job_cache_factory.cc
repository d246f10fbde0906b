// YAML -> PostgresJobCacheOptions (the only YAML in the PostgreSQL backend), read through
// config::YamlMapReader.
#include "backend_options.h"
#include "halite/jobs/postgres_job_cache.h"

namespace halite::jobs {

Result<PostgresJobCacheOptions> ParsePostgresJobCacheOptions(const JobCacheContext& context,
                                                             const YAML::Node& node) {
  PostgresJobCacheOptions options;
  options.master_id = context.master_id;
  config::YamlMapReader reader(node, "job_cache.");
  if (!reader.ReadString("dsn", options.dsn) || options.dsn.empty()) {
    if (!reader.HasProblem("dsn")) {
      reader.AddProblem("dsn",
                        "must be set (a libpq connection string, e.g. "
                        "'host=10.0.0.5 port=5432 dbname=salt user=halite')");
    }
  }
  reader.ReadString("schema", options.schema);
  reader.ReadInt("batch_max", options.batch_max, 1, 100'000);
  reader.ReadInt("pool_size", options.pool_size, 1, 64);
  reader.ReadDuration("connect_timeout_ms", options.connect_timeout, 100, 600'000);
  reader.ReadDuration("operation_timeout_ms", options.operation_timeout, 100, 600'000);
  std::chrono::seconds retry_for{};
  if (reader.ReadDuration("retry_for_seconds", retry_for, 0, 86'400)) options.retry_for = retry_for;
  reader.ReadInt("clean_chunk", options.clean_chunk, 1, 100'000);
  HALITE_RETURN_IF_ERROR(FinishBackendOptions(reader, "postgres"));
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
