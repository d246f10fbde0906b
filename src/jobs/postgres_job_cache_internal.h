// What postgres_job_cache.cc and postgres_job_cache_writer.cc share. Internal.
#pragma once

#include <string_view>

namespace halite::jobs {

// PostgreSQL text: valid UTF-8 (the database encoding we require) without NUL.
bool ValidPgText(std::string_view s);

}  // namespace halite::jobs
