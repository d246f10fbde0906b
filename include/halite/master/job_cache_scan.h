// JobCacheScan: publishes the jobs in the shared job cache that reached this master by no
// other way (the peer link to the master that published them is cut, or was down for longer
// than its backlog holds; docs/failure-modes.md). Every job is saved before it is published
// anywhere, so a master that scans the last minute of jobs misses none of them.
//
// A scan lists the jobs saved within `window` and at least `settle` ago (a forward from a live
// peer takes milliseconds; the scan is for the ones that never come), `max` at a time,
// and publishes each one not yet in `published` (shared with cluster::PublishForwarder), with
// the minions that returned already left out of its target (as a replay does; the others drop
// a jid they already have). A restarted master publishes the last minute's jobs too: a peer
// that forwarded a job to its earlier self does not send it again.
//
// Thread-safe; Run blocks on the job cache (call it on a worker).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "halite/common/recent_set.h"
#include "halite/jobs/job_cache.h"
#include "halite/master/services.h"
#include "halite/master/targeting.h"

namespace halite::master {

struct JobCacheScanOptions {
  std::chrono::seconds window{60};
  std::chrono::seconds settle{2};
  std::size_t max = 1000;      // jids read from the job cache at once
  std::size_t max_pages = 10;  // reads of `max` per scan: at most 10,000 jobs a scan
};

class JobCacheScan {
 public:
  // Every reference must outlive this. `local` publishes to this master's minions only;
  // `recent` learns each job published, so its returns here are checked against its minions.
  JobCacheScan(jobs::JobCache& cache, JobPublisher& local, RecentJobs& recent, RecentSet& published,
               JobCacheScanOptions options = {});

  // One scan; returns at once when another is running. Errors are logged (once a minute).
  void Run();
  // Whether a scan is running (the caller need not post another).
  bool running() const { return running_.load(); }
  // Jobs published by scans so far.
  std::uint64_t published() const { return published_count_.load(); }

 private:
  // Publishes `jid` unless it was published here already, a minion started it, or every
  // minion it expects has returned.
  void Consider(const std::string& jid);
  jobs::JobCache& cache_;
  JobPublisher& local_;
  RecentJobs& recent_;
  RecentSet& published_;
  const JobCacheScanOptions options_;
  std::atomic<bool> running_{false};
  std::atomic<std::uint64_t> published_count_{0};
};

}  // namespace halite::master
