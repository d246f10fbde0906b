#include "halite/master/job_cache_scan.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "halite/common/logging.h"
#include "halite/jobs/jid.h"
#include "halite/master/publish_job.h"
#include "halite/master/publish_replay.h"

namespace halite::master {

JobCacheScan::JobCacheScan(jobs::JobCache& cache, JobPublisher& local, RecentJobs& recent,
                           RecentSet& published, JobCacheScanOptions options)
    : cache_(cache), local_(local), recent_(recent), published_(published), options_(options) {}

void JobCacheScan::Run() {
  if (running_.exchange(true)) return;  // the last scan is still running
  const auto now = std::chrono::system_clock::now();
  const std::string settled = jobs::GenerateJid(now - options_.settle);
  auto jids = cache_.JidsSince(jobs::GenerateJid(now - options_.window), options_.max);
  if (!jids.ok()) {
    // Every scan fails while the job cache is down: once a minute is enough to say so.
    static LogLimiter limiter(std::chrono::minutes(1));
    if (auto held_back = limiter.Pass()) {
      spdlog::warn("job cache scan for unforwarded jobs: {}{}", jids.error().message,
                   SuppressedSuffix(*held_back));
    }
    running_ = false;
    return;
  }
  for (const std::string& jid : *jids) {
    if (jid >= settled) break;  // sorted: the rest are too new
    if (published_.Contains(jid)) continue;
    auto job = cache_.LoadJob(jid);
    if (!job.ok()) continue;  // not readable yet: the next scan tries again
    if (jobs::IsMinionJob(*job)) {
      // A minion started it (its scheduler, salt-call) and ran it already; its load is the
      // minion's, never to be published by a master (finding 24).
      (void)published_.Insert(jid);
      continue;
    }
    wire::Value pub = MinionPublishLoad(job->load);
    std::set<std::string, std::less<>> returned;
    if (auto returns = cache_.LoadReturns(jid); returns.ok()) {
      for (const auto& r : *returns) returned.insert(r.minion_id);
    }
    const bool all_returned =
        !job->minions.empty() &&
        std::all_of(job->minions.begin(), job->minions.end(),
                    [&](const std::string& id) { return returned.count(id) != 0; });
    if (!published_.Insert(jid)) continue;  // a forward arrived meanwhile
    if (all_returned) continue;             // nothing left to deliver
    if (!returned.empty()) {
      if (auto tgt = TargetExcluding(pub, returned)) {
        pub.Set("tgt", std::move(*tgt));
        pub.Set("tgt_type", "compound");
      }
    }
    published_count_++;
    spdlog::warn("publishing {} from the job cache: no peer forwarded it here", jid);
    recent_.Remember(*job);  // its returns here are checked against its minions
    (void)local_.Publish(std::move(pub));
  }
  running_ = false;
}

}  // namespace halite::master
