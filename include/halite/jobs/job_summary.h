// Shared by the backends: one saved load rendered as a jobs.list_jobs line. Pure, reentrant.
#pragma once

#include <string_view>

#include "halite/jobs/job_cache.h"
#include "halite/wire/msgpack.h"

namespace halite::jobs {

// Salt's format_jid_instance: fun, arg, tgt, tgt_type and user from `load`, with Salt's
// defaults when they are missing ("unknown-function", [], "unknown-target", "list", "root"),
// and StartTime from the jid.
JobSummary SummarizeJob(std::string_view jid, const wire::Value& load);

}  // namespace halite::jobs
