// The whole list of job cache backends. No static self-registration (STYLE.md, Backends).
#include "halite/jobs/job_cache_registry.h"
#include "halite/jobs/local_job_cache.h"
#ifdef HALITE_WITH_POSTGRES
#include "halite/jobs/postgres_job_cache.h"
#endif

namespace halite::jobs {

void RegisterBuiltinJobCaches(JobCacheRegistry& registry) {
  registry.Register("local_cache", &CreateLocalJobCache);
#ifdef HALITE_WITH_POSTGRES
  registry.Register("postgres", &CreatePostgresJobCache);
#endif
}

}  // namespace halite::jobs
