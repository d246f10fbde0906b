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
  std::string since = jobs::GenerateJid(now - options_.window);
  // Page by page: more than `max` jobs in the window (a busy cluster, or a minion's own jobs
  // with jids of its choosing just inside it) no longer hide the rest until they age out.
  for (std::size_t page = 0; page < options_.max_pages; ++page) {
    auto jids = cache_.JidsSince(since, options_.max);
    if (!jids.ok()) {
      // Every scan fails while the job cache is down: once a minute is enough to say so.
      static LogLimiter limiter(std::chrono::minutes(1));
      if (auto held_back = limiter.Pass()) {
        spdlog::warn("job cache scan for unforwarded jobs: {}{}", jids.error().message,
                     SuppressedSuffix(*held_back));
      }
      break;
    }
    bool last_page = jids->size() < options_.max;
    for (const std::string& jid : *jids) {
      if (jid >= settled) {  // sorted: the rest are too new
        last_page = true;
        break;
      }
      Consider(jid);
    }
    if (last_page || jids->empty()) break;
    // The smallest jid after the last one: '-' is the lowest byte a jid's suffix may hold.
    since = jids->back() + "-";
  }
  running_ = false;
}

void JobCacheScan::Consider(const std::string& jid) {
  if (published_.Contains(jid)) return;
  auto job = cache_.LoadJob(jid);
  if (!job.ok()) return;  // not readable yet: the next scan tries again
  if (jobs::IsMinionJob(*job)) {
    // A minion started it (its scheduler, salt-call) and ran it already; its load is the
    // minion's, never to be published by a master (finding 24).
    (void)published_.Insert(jid);
    return;
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
  if (!published_.Insert(jid)) return;  // a forward arrived meanwhile
  if (all_returned) return;             // nothing left to deliver
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

}  // namespace halite::master
