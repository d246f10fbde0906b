// LocalJobCache: the default JobCache, Salt's local_cache layout (salt-wire.md 9.2) under
// <cachedir>/jobs, so stock `salt-run jobs.lookup_jid` / `jobs.list_jobs` read what it writes:
//   jobs/<h[0:2]>/<h[2:]>/jid                 the jid (raw bytes)
//                        /.load.p             msgpack (bin type) of the load
//                        /.minions.p          msgpack list of expected minions
//                        /<minion>/return.p   msgpack {return, retcode?, success?}
//                        /<minion>/out.p      msgpack outputter name
//
// Writes: files land by temp file + rename, so readers never see a partial file. SaveJob is
// durable before it returns. StoreReturn is group-committed by one writer thread ("jobs-writer"):
// it takes everything queued (up to batch_max), writes the returns (spread over io_threads),
// makes the whole batch durable (one syncfs(2), or an fsync of every file and directory written)
// and only then runs the callbacks.
// mkdir(<minion>) decides duplicates, so several masters can share one directory: a return
// counts as already stored only when its return.p exists and decodes (a torn file left by a
// crash before the batch was durable is replaced, since that return was never acknowledged).
//
// Thread-safe (JobCache contract). Threads: "jobs-writer" (batches, commits, runs the callbacks)
// and io_threads - 1 helpers "jobs-io-N" that write in parallel with it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "halite/common/check.h"
#include "halite/common/result.h"
#include "halite/jobs/job_cache.h"
#include "halite/jobs/job_cache_registry.h"

namespace halite::jobs {

struct LocalJobCacheOptions {
  enum class FsyncMode {
    // One syncfs(2) per batch: cheapest, and durable on local file systems (ext4, xfs). On
    // FUSE (GlusterFS), NFS, CIFS and 9p syncfs may not reach the server, so Open switches to
    // kPerFile there (with a warning).
    kSyncfs,
    // fsync(2) of every file written and every directory that got an entry, spread over the
    // io_threads (SaveJob: each file before its rename, so a load is never torn).
    kPerFile,
  };

  std::filesystem::path cachedir;  // the store is <cachedir>/jobs
  std::size_t batch_max = 512;     // returns made durable together, at most
  // How long the writer may hold a partial batch, waiting for more returns, before it writes.
  // 0: write whatever is queued at once (the batch grows by itself while a sync is running).
  std::chrono::milliseconds max_delay{0};
  FsyncMode fsync_mode = FsyncMode::kSyncfs;
  // Threads that write a batch's returns (and, with kPerFile, fsync them) in parallel; the
  // writer thread is one of them. Creating files is kernel work, so this scales with cores.
  std::size_t io_threads = 2;
  // Returns waiting for the writer, in bytes (wire::PackedSizeBound): past it a return is
  // refused (ResourceExhausted: not acknowledged, so its minion sends it again), as the
  // PostgreSQL cache's queue_max_bytes. A stalled shared folder otherwise piled them up.
  std::size_t queue_max_bytes = 256u << 20;
};

class LocalJobCache final : public JobCache {
 public:
  using FsyncMode = LocalJobCacheOptions::FsyncMode;

  // Creates <cachedir>/jobs when missing and starts the writer thread. InvalidArgument for bad
  // options; Unavailable when the directory cannot be created. Later, only <cachedir>/jobs is
  // ever re-created: a vanished cachedir (say, an unmounted share) makes writes fail instead of
  // filling the local disk underneath.
  static Result<std::unique_ptr<LocalJobCache>> Open(const LocalJobCacheOptions& options);

  ~LocalJobCache() override;
  LocalJobCache(const LocalJobCache&) = delete;
  LocalJobCache& operator=(const LocalJobCache&) = delete;

  // The mode in effect (see FsyncMode::kSyncfs for when it differs from the options).
  FsyncMode fsync_mode() const { return fsync_mode_; }

  // Take the paths used where O_TMPFILE (FUSE, NFS) or renameat2 flags are missing.
  void DisableTmpfileForTest() { tmpfile_unsupported_ = true; }
  void DisableRenameNoreplaceForTest() { noreplace_rename_unsupported_ = true; }

  // JobCache:
  Status SaveJob(const Job& job) override;
  Result<Job> LoadJob(std::string_view jid) override;
  void StoreReturn(JobReturn ret, StoreCallback done) override;
  Result<std::vector<JobReturn>> LoadReturns(std::string_view jid) override;
  Result<std::vector<JobSummary>> ListJobs() override;
  // From <cachedir>/halite_recent_jobs: one empty file per job SaveJob saved, removed by
  // whoever reads it more than kRecentKeep after its jid's time.
  Result<std::vector<std::string>> JidsSince(std::string_view since, std::size_t limit) override;
  // As Salt's clean_old_jobs: a job is old when its jid file's ctime is more than `keep` before
  // `now`. Directories without a jid file are removed too, once their own ctime is that old
  // (Salt removes them at once; the grace keeps a concurrent writer's fresh directory), and so
  // are empty first-level directories.
  using JobCache::CleanOld;
  Result<std::size_t> CleanOld(std::chrono::seconds keep,
                               std::chrono::system_clock::time_point now) override;
  Status Check() override;
  void Shutdown() override;

 private:
  struct Pending {
    JobReturn ret;
    StoreCallback done;
    std::chrono::steady_clock::time_point queued;
    std::size_t bytes = 0;  // counted in queued_bytes_
  };
  class SyncSet;
  struct Worker;

  LocalJobCache(const LocalJobCacheOptions& options, FsyncMode fsync_mode);

  void WriterMain();
  void HelperMain(std::size_t index);
  // Writer thread only: runs `fn` on every I/O thread (the writer is worker 0) and returns when
  // all have finished. `fn` takes its items from a shared counter.
  void FanOut(const std::function<void(Worker&)>& fn);
  void WriteBatch(std::deque<Pending>& batch);
  // Runs on the I/O threads; `worker` belongs to the calling thread.
  Result<StoreOutcome> WriteReturn(const JobReturn& ret, Worker& worker);
  // Makes what `sync` collected durable. `fan_out` (writer thread only) spreads the fsyncs of
  // kPerFile over the I/O threads.
  Status Commit(SyncSet& sync, bool fan_out);
  // Makes the jid directory and its jid file (Salt's prep_jid with a passed jid).
  Status PrepareJidDir(std::string_view jid, const std::string& hash, SyncSet& sync);
  // Puts `data` at dir/name atomically (an O_TMPFILE linked in, or a temp file renamed). With
  // `replace` false an existing dir/name is kept and the result is false.
  Result<bool> WriteFileAtomic(const std::string& dir, std::string_view name, std::string_view data,
                               bool replace, SyncSet& sync);
  // The O_TMPFILE + linkat way; nullopt when the file system cannot do it.
  Result<std::optional<bool>> LinkNewFile(const std::string& dir, const std::string& final_path,
                                          std::string_view data, SyncSet& sync);
  std::string JidPath(std::string_view hash) const;

  void NoteRecent(const std::string& jid);

  const LocalJobCacheOptions options_;
  const FsyncMode fsync_mode_;
  const std::string cachedir_;  // as a string, for the POSIX calls
  const std::string jobs_dir_;  // <cachedir>/jobs
  const std::string temp_tag_;  // random, keeps temp names unique across masters
  std::atomic<std::uint64_t> temp_counter_{0};
  std::atomic<bool> noreplace_rename_unsupported_{false};
  std::atomic<bool> tmpfile_unsupported_{false};
  std::atomic<bool> link_via_proc_{false};  // linkat(AT_EMPTY_PATH) needs a capability
  // Bumped by CleanOld so that the I/O threads forget which jid directories exist.
  std::atomic<std::uint64_t> clean_generation_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_ HALITE_GUARDED_BY(mu_);
  std::size_t queued_bytes_ HALITE_GUARDED_BY(mu_) = 0;
  bool stopping_ HALITE_GUARDED_BY(mu_) = false;

  // The writer hands a fan-out to the helpers ("jobs-io-N") through these.
  std::mutex fan_mu_;
  std::condition_variable fan_cv_;
  std::condition_variable fan_done_cv_;
  const std::function<void(Worker&)>* fan_fn_ HALITE_GUARDED_BY(fan_mu_) = nullptr;
  std::uint64_t fan_generation_ HALITE_GUARDED_BY(fan_mu_) = 0;
  std::size_t fan_pending_ HALITE_GUARDED_BY(fan_mu_) = 0;
  bool fan_stop_ HALITE_GUARDED_BY(fan_mu_) = false;

  // workers_[0] is the writer's; workers_[i] belongs to helpers_[i - 1].
  std::vector<std::unique_ptr<Worker>> workers_;
  std::mutex shutdown_mu_;  // serialises Shutdown callers
  std::thread writer_;
  std::vector<std::thread> helpers_;
};

// local_job_cache_factory.cc: the YAML side. Keys: batch_max (1..1000000), max_delay_ms
// (0..10000), fsync_mode ("syncfs" | "per_file"), io_threads (1..64). A null node means defaults.
// InvalidArgument lists every problem (unknown keys included).
Result<LocalJobCacheOptions> ParseLocalJobCacheOptions(const JobCacheContext& context,
                                                       const YAML::Node& options);
Result<std::unique_ptr<JobCache>> CreateLocalJobCache(const JobCacheContext& context,
                                                      const YAML::Node& options);

}  // namespace halite::jobs
