// The local job cache's returns: the group-commit writer ("jobs-writer") and its I/O helpers
// ("jobs-io-N").
#include <fcntl.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>

#include "halite/wire/encoding.h"
#include "local_job_cache_files.h"

namespace halite::jobs {

using namespace local_fs;

// ---------------------------------------------------------------------------------------------
// Returns: the writer thread and its helpers.

void LocalJobCache::StoreReturn(JobReturn ret, StoreCallback done) {
  ret.load = wire::Value();  // not stored; no need to keep it queued
  const std::size_t bytes = QueuedReturnBytes(ret, wire::PackedSizeBound(ret.ret));
  std::optional<Error> refused;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      refused = Error::FailedPrecondition("job cache is shut down");
    } else if (queued_bytes_ + bytes > options_.queue_max_bytes && !queue_.empty()) {
      refused = Error::ResourceExhausted("job cache: the write queue is full");
    } else {
      queued_bytes_ += bytes;
      queue_.push_back(
          Pending{std::move(ret), std::move(done), std::chrono::steady_clock::now(), bytes});
      wake = queue_.size() == 1 || queue_.size() >= options_.batch_max;
    }
  }
  if (refused) {
    done(*refused);
    return;
  }
  if (wake) cv_.notify_one();
}

void LocalJobCache::WriterMain() {
  try {
    std::deque<Pending> batch;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !queue_.empty() || stopping_; });
        if (queue_.empty()) return;  // stopping, and everything queued is done
        if (options_.max_delay.count() > 0 && !stopping_ && queue_.size() < options_.batch_max) {
          const auto deadline = queue_.front().queued + options_.max_delay;
          cv_.wait_until(lock, deadline,
                         [this] { return stopping_ || queue_.size() >= options_.batch_max; });
        }
        if (queue_.size() <= options_.batch_max) {
          batch.swap(queue_);
          queued_bytes_ = 0;
        } else {
          for (std::size_t i = 0; i < options_.batch_max; ++i) {
            queued_bytes_ -= queue_.front().bytes;
            batch.push_back(std::move(queue_.front()));
            queue_.pop_front();
          }
        }
      }
      WriteBatch(batch);
      batch.clear();
    }
  } catch (const std::exception& e) {
    spdlog::critical("jobs-writer: uncaught exception: {}", e.what());
    std::abort();
  } catch (...) {
    spdlog::critical("jobs-writer: uncaught exception");
    std::abort();
  }
}

void LocalJobCache::HelperMain(std::size_t index) {
  try {
    std::uint64_t seen = 0;
    for (;;) {
      const std::function<void(Worker&)>* fn = nullptr;
      {
        std::unique_lock<std::mutex> lock(fan_mu_);
        fan_cv_.wait(lock, [&] { return fan_stop_ || fan_generation_ != seen; });
        if (fan_stop_) return;
        seen = fan_generation_;
        fn = fan_fn_;
      }
      (*fn)(*workers_[index]);
      std::lock_guard<std::mutex> lock(fan_mu_);
      if (--fan_pending_ == 0) fan_done_cv_.notify_one();
    }
  } catch (const std::exception& e) {
    spdlog::critical("jobs-io: uncaught exception: {}", e.what());
    std::abort();
  } catch (...) {
    spdlog::critical("jobs-io: uncaught exception");
    std::abort();
  }
}

void LocalJobCache::FanOut(const std::function<void(Worker&)>& fn) {
  if (helpers_.empty()) {
    fn(*workers_[0]);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(fan_mu_);
    fan_fn_ = &fn;
    ++fan_generation_;
    fan_pending_ = helpers_.size();
  }
  fan_cv_.notify_all();
  fn(*workers_[0]);
  std::unique_lock<std::mutex> lock(fan_mu_);
  fan_done_cv_.wait(lock, [this] { return fan_pending_ == 0; });
  fan_fn_ = nullptr;
}

void LocalJobCache::WriteBatch(std::deque<Pending>& batch) {
  const std::size_t n = batch.size();
  std::vector<Result<StoreOutcome>> outcomes(n, Error::Internal("not written"));
  std::atomic<std::size_t> next{0};
  const std::function<void(Worker&)> write = [&](Worker& worker) {
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      outcomes[i] = WriteReturn(batch[i].ret, worker);
    }
  };
  if (n < kMinFanOut) {
    write(*workers_[0]);
  } else {
    FanOut(write);
  }

  SyncSet sync(fsync_mode_, SyncSet::FileSync::kAtCommit);
  for (const std::unique_ptr<Worker>& worker : workers_) sync.MergeFrom(worker->sync);
  if (Status durable = Commit(sync, /*fan_out=*/true); !durable.ok()) {
    spdlog::error("job cache: a batch of {} returns is not durable: {}", n,
                  durable.error().ToString());
    for (const std::unique_ptr<Worker>& worker : workers_) worker->known_jid_dirs.clear();
    for (Result<StoreOutcome>& outcome : outcomes) {
      if (outcome.ok()) outcome = durable.error().WithContext("return not durable");
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (batch[i].done) batch[i].done(std::move(outcomes[i]));
  }
}

Status LocalJobCache::Commit(SyncSet& sync, bool fan_out) {
  if (!sync.touched()) return OkStatus();
  if (!sync.per_file()) {
    Fd fd(::open(jobs_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.ok()) return IoError("open", jobs_dir_, errno);
    if (::syncfs(fd.get()) != 0) return IoError("syncfs", jobs_dir_, errno);
    return OkStatus();
  }
  const std::vector<std::string> targets = sync.Targets();
  std::atomic<std::size_t> next{0};
  std::mutex error_mu;
  std::optional<Error> first_error;
  const std::function<void(Worker&)> fsync_all = [&](Worker&) {
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < targets.size();) {
      const std::string& path = targets[i];
      Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      const int err = !fd.ok() ? errno : (::fsync(fd.get()) != 0 ? errno : 0);
      if (err != 0) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!first_error) first_error = IoError("fsync", path, err);
      }
    }
  };
  // Parallel fsyncs share journal commits (ext4) and round trips (network file systems).
  if (fan_out && targets.size() >= kMinFanOut) {
    FanOut(fsync_all);
  } else {
    fsync_all(*workers_[0]);
  }
  if (first_error) return *std::move(first_error);
  return OkStatus();
}

Result<StoreOutcome> LocalJobCache::WriteReturn(const JobReturn& ret, Worker& worker) {
  if (ret.jid.empty()) return Error::InvalidArgument("return without a jid");
  if (!IsStorableMinionId(ret.minion_id)) {
    return Error::InvalidArgument("minion id '" + ret.minion_id + "' cannot be stored");
  }
  if (const std::uint64_t generation = clean_generation_.load(std::memory_order_acquire);
      generation != worker.known_generation) {
    worker.known_jid_dirs.clear();
    worker.known_generation = generation;
  }
  SyncSet& sync = worker.sync;
  const std::string hash = wire::Sha256Hex(ret.jid);
  const std::string jid_dir = JidPath(hash);
  const std::string minion_dir = jid_dir + "/" + ret.minion_id;

  int err = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!worker.known_jid_dirs.contains(jid_dir)) {
      HALITE_RETURN_IF_ERROR(PrepareJidDir(ret.jid, hash, sync));
      if (worker.known_jid_dirs.size() >= kMaxKnownJidDirs) worker.known_jid_dirs.clear();
      worker.known_jid_dirs.insert(jid_dir);
    }
    err = MakeDir(minion_dir);
    if (err != ENOENT) break;
    // Removed under us (a cleanup, maybe on another master): make it again.
    worker.known_jid_dirs.erase(jid_dir);
  }

  bool replace = false;
  if (err == 0) {
    sync.AddDir(jid_dir);
  } else if (err == EEXIST) {
    // Salt's replay rule: the directory says a return was seen. It counts only if it is
    // complete; without a return.p another writer is between its mkdir and its link (the
    // no-replace link below decides), or crashed there.
    const std::string return_path = minion_dir + "/" + std::string(kReturnFile);
    std::string existing;
    const int read_err = ReadWholeFile(return_path, existing);
    if (read_err == 0 && !existing.empty() && wire::Unpack(existing).ok()) {
      sync.Touch();  // the first copy may still be in flight: make it durable before saying so
      return StoreOutcome::kDuplicate;
    }
    if (read_err != 0 && read_err != ENOENT) return IoError("read", return_path, read_err);
    sync.AddDir(jid_dir);  // our return.p will depend on that directory entry too
    if (read_err == 0) {
      // A torn file: its batch never became durable, so it was never acknowledged.
      spdlog::warn("job cache: replacing the unreadable {}", return_path);
      replace = true;
    }
  } else {
    return IoError("mkdir", minion_dir, err);
  }

  // out.p first: return.p is what makes the return visible (and a duplicate).
  if (!ret.out.empty()) {
    HALITE_RETURN_IF_ERROR(
        WriteFileAtomic(minion_dir, kOutFile,
                        wire::Pack(wire::Value(ret.out), wire::Packing::kBinType), replace, sync));
  }
  HALITE_ASSIGN_OR_RETURN(
      const bool installed,
      WriteFileAtomic(minion_dir, kReturnFile,
                      wire::Pack(ReturnRecord(ret), wire::Packing::kBinType), replace, sync));
  return installed ? StoreOutcome::kStored : StoreOutcome::kDuplicate;
}

}  // namespace halite::jobs
