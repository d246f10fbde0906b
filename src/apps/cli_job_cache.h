// The CLIs' own view of the job cache: the master's configured backend opened in the CLI's
// process, for when the master stops answering in the middle of a job (a CLI on a master
// that dies still prints every return the cluster stored; docs/failure-modes.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "halite/client/local_client.h"
#include "halite/config/master_config.h"
#include "halite/jobs/job_cache_registry.h"

namespace halite::apps {

// Opens the backend on first use, then reads the job's returns; a job with nothing stored
// is an empty list.
inline client::JobCacheReader JobCacheReaderFor(const config::MasterConfig& cfg) {
  struct State {
    std::string backend;
    jobs::JobCacheContext context;
    YAML::Node options;
    std::unique_ptr<jobs::JobCache> cache;
  };
  auto state = std::make_shared<State>(
      State{cfg.master_job_cache, {cfg.cachedir, cfg.id}, YAML::Clone(cfg.job_cache), nullptr});
  return [state](const std::string& jid) -> Result<std::vector<client::MinionReturn>> {
    if (!state->cache) {
      jobs::JobCacheRegistry registry;
      jobs::RegisterBuiltinJobCaches(registry);
      HALITE_ASSIGN_OR_RETURN(state->cache,
                              registry.Create(state->backend, state->context, state->options));
    }
    auto stored = state->cache->LoadReturns(jid);
    if (!stored.ok()) {
      if (stored.error().code == ErrorCode::kNotFound) return std::vector<client::MinionReturn>{};
      return stored.error();
    }
    std::vector<client::MinionReturn> out;
    out.reserve(stored->size());
    for (auto& r : *stored) {
      out.push_back(
          {std::move(r.minion_id), std::move(r.ret), r.retcode, r.success, std::move(r.out)});
    }
    return out;
  };
}

}  // namespace halite::apps
