// The whole list of job cache backends. No static self-registration (STYLE.md, Backends).
#include "halite/jobs/job_cache_registry.h"
#include "halite/jobs/local_job_cache.h"

namespace halite::jobs {

void RegisterBuiltinJobCaches(JobCacheRegistry& registry) {
  registry.Register("local_cache", &CreateLocalJobCache);
#ifdef HALITE_WITH_POSTGRES
  // The PostgreSQL backend registers here, as "postgres" (postgres_job_cache{.h,.cc,_factory.cc}):
  // registry.Register("postgres", &CreatePostgresJobCache);
#endif
}

}  // namespace halite::jobs
