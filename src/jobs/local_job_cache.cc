#include "halite/jobs/local_job_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <system_error>
#include <utility>

#include "halite/common/file_system.h"
#include "halite/jobs/jid.h"
#include "halite/jobs/job_summary.h"
#include "halite/wire/encoding.h"
#include "halite/wire/msgpack.h"
#include "local_job_cache_files.h"

namespace halite::jobs {

using namespace local_fs;

Result<std::unique_ptr<LocalJobCache>> LocalJobCache::Open(const LocalJobCacheOptions& options) {
  if (options.cachedir.empty()) return Error::InvalidArgument("local_cache: cachedir is empty");
  if (options.batch_max == 0 || options.batch_max > kMaxBatch) {
    return Error::InvalidArgument("local_cache: batch_max must be between 1 and " +
                                  std::to_string(kMaxBatch));
  }
  if (options.max_delay.count() < 0) {
    return Error::InvalidArgument("local_cache: max_delay must not be negative");
  }
  if (options.io_threads == 0 || options.io_threads > kMaxIoThreads) {
    return Error::InvalidArgument("local_cache: io_threads must be between 1 and " +
                                  std::to_string(kMaxIoThreads));
  }
  const std::filesystem::path jobs = options.cachedir / "jobs";
  if (const int err = MakeDirs(jobs); err != 0) {
    return Error::Unavailable("create " + jobs.string() + ": " + ErrnoText(err));
  }

  FsyncMode mode = options.fsync_mode;
  struct statfs fs {};
  if (mode == FsyncMode::kSyncfs && ::statfs(jobs.c_str(), &fs) == 0 &&
      SyncfsMayNotPersist(static_cast<unsigned long>(fs.f_type))) {
    spdlog::warn(
        "job cache: {} is on a network or FUSE file system where syncfs may not persist "
        "data; using fsync_mode per_file",
        jobs.string());
    mode = FsyncMode::kPerFile;
  }
  return std::unique_ptr<LocalJobCache>(new LocalJobCache(options, mode));
}

LocalJobCache::LocalJobCache(const LocalJobCacheOptions& options, FsyncMode fsync_mode)
    : options_(options),
      fsync_mode_(fsync_mode),
      cachedir_(options.cachedir.string()),
      jobs_dir_((options.cachedir / "jobs").string()),
      temp_tag_(wire::RandomNonce().substr(0, 12)) {
  for (std::size_t i = 0; i < options_.io_threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(fsync_mode_));
  }
  for (std::size_t i = 1; i < options_.io_threads; ++i) {
    helpers_.emplace_back([this, i] { HelperMain(i); });
    pthread_setname_np(helpers_.back().native_handle(), ("jobs-io-" + std::to_string(i)).c_str());
  }
  writer_ = std::thread([this] { WriterMain(); });
  pthread_setname_np(writer_.native_handle(), "jobs-writer");
}

LocalJobCache::~LocalJobCache() { Shutdown(); }

void LocalJobCache::Shutdown() {
  std::lock_guard<std::mutex> guard(shutdown_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) {
    HALITE_CHECK(writer_.get_id() != std::this_thread::get_id())
        << "JobCache::Shutdown called from a StoreCallback";
    writer_.join();
  }
  // The writer is gone, so no fan-out is running.
  {
    std::lock_guard<std::mutex> lock(fan_mu_);
    fan_stop_ = true;
  }
  fan_cv_.notify_all();
  for (std::thread& helper : helpers_) {
    if (helper.joinable()) helper.join();
  }
}

std::string LocalJobCache::JidPath(std::string_view hash) const {
  std::string path;
  path.reserve(jobs_dir_.size() + hash.size() + 2);
  path.append(jobs_dir_).append("/").append(hash.substr(0, 2)).append("/").append(hash.substr(2));
  return path;
}

// ---------------------------------------------------------------------------------------------
// Jobs and readers: the caller's thread.

Status LocalJobCache::SaveJob(const Job& job) {
  if (job.jid.empty()) return Error::InvalidArgument("job without a jid");
  if (!job.load.is_map()) return Error::InvalidArgument("job " + job.jid + ": load is not a map");
  wire::Value load = job.load;
  load.Erase("key");  // the master's root key never reaches the disk
  // Salt's jobs.list_jobs reads load["jid"] and fails on the whole listing without it.
  if (load.Find("jid") == nullptr) load.Set("jid", wire::Value(job.jid));

  SyncSet sync(fsync_mode_, SyncSet::FileSync::kBeforeRename);
  const std::string hash = wire::Sha256Hex(job.jid);
  const std::string jid_dir = JidPath(hash);
  HALITE_RETURN_IF_ERROR(PrepareJidDir(job.jid, hash, sync));
  HALITE_RETURN_IF_ERROR(WriteFileAtomic(
      jid_dir, kLoadFile, wire::Pack(load, wire::Packing::kBinType), /*replace=*/true, sync));

  {
    // Read-merge-write of .minions.p, serialised across threads and processes (other masters
    // on the shared directory) by a lock on the jid directory. Where the file system has no
    // flock, concurrent merges from two masters may lose one side's extra minions.
    Fd dir_fd(::open(jid_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd.ok()) return IoError("open", jid_dir, errno);
    while (::flock(dir_fd.get(), LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      spdlog::debug("job cache: flock {}: {}", jid_dir, ErrnoText(errno));
      break;
    }
    std::set<std::string> minions(job.minions.begin(), job.minions.end());
    const std::string minions_path = jid_dir + "/" + std::string(kMinionsFile);
    std::string bytes;
    if (const int err = ReadWholeFile(minions_path, bytes); err == 0) {
      Result<wire::Value> saved = wire::Unpack(bytes);
      if (saved.ok() && saved->is_array()) {
        for (const wire::Value& minion : *saved->array()) {
          if (const std::string* id = minion.str()) minions.insert(*id);
        }
      } else {
        spdlog::warn("job cache: replacing the unreadable {}", minions_path);
      }
    } else if (err != ENOENT) {
      return IoError("read", minions_path, err);
    }
    wire::Array list;
    list.reserve(minions.size());
    for (const std::string& minion : minions) list.emplace_back(minion);
    HALITE_RETURN_IF_ERROR(WriteFileAtomic(
        jid_dir, kMinionsFile, wire::Pack(wire::Value(std::move(list)), wire::Packing::kBinType),
        /*replace=*/true, sync));
  }  // closing the descriptor releases the lock
  HALITE_RETURN_IF_ERROR(Commit(sync, /*fan_out=*/false));
  // No marker for a job a minion started itself: no scan publishes it (finding 24), and its
  // jid is the minion's choice, so one far in the future would never expire.
  if (!IsMinionJob(job)) NoteRecent(job.jid);
  return OkStatus();
}

namespace {

constexpr const char* kRecentDir = "halite_recent_jobs";
// Markers older than this are removed by whoever lists them; a cut peer link that lasts
// longer is caught up by the peer channel's own backlog, not by this hint.
constexpr auto kRecentKeep = std::chrono::minutes(10);

}  // namespace

// A hint for the other masters (JidsSince): an empty file, not synced; the job itself is
// durable already. A failure is logged and changes nothing else.
void LocalJobCache::NoteRecent(const std::string& jid) {
  const std::string dir = cachedir_ + "/" + kRecentDir;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    spdlog::debug("job cache: mkdir {}: {}", dir, ErrnoText(errno));
    return;
  }
  const std::string path = dir + "/" + jid;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    spdlog::debug("job cache: create {}: {}", path, ErrnoText(errno));
    return;
  }
  ::close(fd);
}

Result<std::vector<std::string>> LocalJobCache::JidsSince(std::string_view since,
                                                          std::size_t limit) {
  const std::string dir = cachedir_ + "/" + kRecentDir;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return std::vector<std::string>{};
    return IoError("open", dir, errno);
  }
  const auto now = std::chrono::system_clock::now();
  const std::string expired = GenerateJid(now - kRecentKeep);
  // Masters make the jids marked here, from their clocks: one from beyond the clocks' skew is
  // not a job to catch up with (and would never expire).
  const std::string future = GenerateJid(now + kRecentKeep);
  std::vector<std::string> out;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (!IsJid(name)) continue;
    if (name < std::string_view(expired) || name > std::string_view(future)) {
      (void)::unlinkat(::dirfd(d), e->d_name, 0);  // another master may have been first
      continue;
    }
    if (name >= since) out.emplace_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  if (out.size() > limit) out.resize(limit);
  return out;
}

Result<Job> LocalJobCache::LoadJob(std::string_view jid) {
  if (jid.empty()) return Error::NotFound("no job with an empty jid");
  const std::string jid_dir = JidPath(wire::Sha256Hex(jid));
  const std::string load_path = jid_dir + "/" + std::string(kLoadFile);
  std::string bytes;
  if (const int err = ReadWholeFile(load_path, bytes); err != 0) {
    if (IsMissing(err)) return Error::NotFound("no job " + std::string(jid));
    return IoError("read", load_path, err);
  }
  Result<wire::Value> load = wire::Unpack(bytes);
  if (!load.ok()) return Error::DataLoss(load_path + ": " + load.error().message);
  if (!load->is_map()) return Error::DataLoss(load_path + ": not a map");

  Job job;
  job.jid = std::string(jid);
  job.load = std::move(load).value();
  std::vector<DirEntry> entries;
  if (const int err = ListDir(jid_dir, entries); err != 0) return IoError("list", jid_dir, err);
  std::set<std::string> minions;
  for (const DirEntry& entry : entries) {
    if (!IsMinionsFile(entry.name)) continue;
    const std::string path = jid_dir + "/" + entry.name;
    if (const int err = ReadWholeFile(path, bytes); err != 0) {
      if (IsMissing(err)) continue;
      return IoError("read", path, err);
    }
    Result<wire::Value> list = wire::Unpack(bytes);
    if (!list.ok()) return Error::DataLoss(path + ": " + list.error().message);
    if (!list->is_array()) return Error::DataLoss(path + ": not a list");
    for (const wire::Value& minion : *list->array()) {
      if (const std::string* id = minion.str()) minions.insert(*id);
    }
  }
  job.minions.assign(minions.begin(), minions.end());
  return job;
}

Result<std::vector<JobReturn>> LocalJobCache::LoadReturns(std::string_view jid) {
  if (jid.empty()) return Error::NotFound("no job with an empty jid");
  const std::string jid_dir = JidPath(wire::Sha256Hex(jid));
  std::vector<DirEntry> entries;
  if (const int err = ListDir(jid_dir, entries); err != 0) {
    if (IsMissing(err)) return Error::NotFound("no job " + std::string(jid));
    return IoError("list", jid_dir, err);
  }
  std::vector<JobReturn> returns;
  std::string bytes;
  for (const DirEntry& entry : entries) {
    if (entry.name.front() == '.' || !MaybeDir(entry)) continue;
    const std::string minion_dir = jid_dir + "/" + entry.name;
    const std::string return_path = minion_dir + "/" + std::string(kReturnFile);
    if (const int err = ReadWholeFile(return_path, bytes); err != 0) {
      if (IsMissing(err)) continue;  // not a minion, or a return still being written
      return IoError("read", return_path, err);
    }
    Result<wire::Value> record = wire::Unpack(bytes);
    if (!record.ok()) {
      // Only a crash before the batch was durable leaves one; it was never acknowledged.
      spdlog::warn("job cache: skipping the unreadable {}: {}", return_path,
                   record.error().message);
      continue;
    }
    JobReturn ret;
    ret.jid = std::string(jid);
    ret.minion_id = entry.name;
    if (const wire::Value* value = record->Find("return")) {
      ret.ret = *value;
      if (const wire::Value* retcode = record->Find("retcode")) ret.retcode = retcode->int64();
      if (const wire::Value* success = record->Find("success")) ret.success = success->boolean();
    } else {
      ret.ret = std::move(record).value();  // Salt's old format: return.p holds the bare return
    }
    const std::string out_path = minion_dir + "/" + std::string(kOutFile);
    if (ReadWholeFile(out_path, bytes) == 0) {
      if (Result<wire::Value> out = wire::Unpack(bytes); out.ok() && out->str() != nullptr) {
        ret.out = *out->str();
      }
    }
    returns.push_back(std::move(ret));
  }
  std::sort(returns.begin(), returns.end(),
            [](const JobReturn& a, const JobReturn& b) { return a.minion_id < b.minion_id; });
  return returns;
}

Result<std::vector<JobSummary>> LocalJobCache::ListJobs() {
  std::vector<DirEntry> tops;
  if (const int err = ListDir(jobs_dir_, tops); err != 0) return IoError("list", jobs_dir_, err);
  std::vector<JobSummary> jobs;
  std::vector<DirEntry> finals;
  std::string bytes;
  for (const DirEntry& top : tops) {
    if (!MaybeDir(top)) continue;
    const std::string top_dir = jobs_dir_ + "/" + top.name;
    if (const int err = ListDir(top_dir, finals); err != 0) {
      if (IsMissing(err)) continue;  // removed by a cleanup meanwhile
      return IoError("list", top_dir, err);
    }
    for (const DirEntry& final_entry : finals) {
      if (!MaybeDir(final_entry)) continue;
      const std::string jid_dir = top_dir + "/" + final_entry.name;
      const std::string load_path = jid_dir + "/" + std::string(kLoadFile);
      if (const int err = ReadWholeFile(load_path, bytes); err != 0) {
        if (IsMissing(err)) continue;
        return IoError("read", load_path, err);
      }
      Result<wire::Value> load = wire::Unpack(bytes);
      if (!load.ok() || !load->is_map()) {
        spdlog::warn("job cache: skipping the unreadable {}", load_path);
        continue;
      }
      std::string jid;
      if (ReadWholeFile(jid_dir + "/" + std::string(kJidFile), bytes) == 0 && !bytes.empty()) {
        jid = bytes;
      } else if (const std::string* load_jid = load->FindStr("jid")) {
        jid = *load_jid;
      } else {
        continue;
      }
      jobs.push_back(SummarizeJob(jid, *load));
    }
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const JobSummary& a, const JobSummary& b) { return a.jid < b.jid; });
  return jobs;
}

Result<std::size_t> LocalJobCache::CleanOld(std::chrono::seconds keep,
                                            std::chrono::system_clock::time_point now) {
  if (keep.count() <= 0) return std::size_t{0};
  auto is_old = [&](const struct stat& st) { return now - ToTimePoint(st.st_ctim) > keep; };

  std::vector<DirEntry> tops;
  if (const int err = ListDir(jobs_dir_, tops); err != 0) {
    if (err == ENOENT) return std::size_t{0};
    return IoError("list", jobs_dir_, err);
  }
  std::size_t removed = 0;
  std::vector<std::string> empty_tops;
  std::vector<DirEntry> finals;
  struct stat st {};
  for (const DirEntry& top : tops) {
    if (!MaybeDir(top)) continue;
    const std::string top_dir = jobs_dir_ + "/" + top.name;
    if (ListDir(top_dir, finals) != 0) continue;
    if (finals.empty()) {
      empty_tops.push_back(top_dir);
      continue;
    }
    for (const DirEntry& final_entry : finals) {
      if (!MaybeDir(final_entry)) continue;
      const std::string jid_dir = top_dir + "/" + final_entry.name;
      const std::string jid_path = jid_dir + "/" + std::string(kJidFile);
      bool remove = false;
      if (::stat(jid_path.c_str(), &st) == 0) {
        remove = is_old(st);
      } else if (errno == ENOENT) {
        // No jid file: a corrupt entry, or one a writer is creating right now.
        remove = ::stat(jid_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && is_old(st);
      }
      if (!remove) continue;
      std::error_code ec;
      std::filesystem::remove_all(jid_dir, ec);
      if (ec) {
        spdlog::error("job cache: cannot remove {}: {}", jid_dir, ec.message());
        continue;
      }
      ++removed;
    }
  }
  // Empty first-level directories go once they are old too; rmdir (not a recursive remove)
  // leaves one alone that a writer has just put a job in.
  for (const std::string& top_dir : empty_tops) {
    if (::stat(top_dir.c_str(), &st) == 0 && is_old(st)) ::rmdir(top_dir.c_str());
  }
  clean_generation_.fetch_add(1, std::memory_order_acq_rel);
  return removed;
}

Status LocalJobCache::Check() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Error::FailedPrecondition("job cache is shut down");
  }
  // The probe lives in a directory of its own, two levels down like a job, so that Salt's
  // cleaner (which expects only directories there) can remove a leftover.
  const std::string probe_root = jobs_dir_ + "/" + std::string(kProbeDir);
  int err = MakeDir(probe_root);
  if (err == ENOENT) {
    if (const int jobs_err = MakeDir(jobs_dir_); jobs_err != 0 && jobs_err != EEXIST) {
      return IoError("mkdir", jobs_dir_, jobs_err);
    }
    err = MakeDir(probe_root);
  }
  if (err != 0 && err != EEXIST) return IoError("mkdir", probe_root, err);
  const std::string probe_dir =
      probe_root + "/" + temp_tag_ + "." +
      std::to_string(temp_counter_.fetch_add(1, std::memory_order_relaxed));
  if (const int dir_err = MakeDir(probe_dir); dir_err != 0) {
    return IoError("mkdir", probe_dir, dir_err);
  }
  const std::string probe_path = probe_dir + "/probe";
  const std::string token = wire::RandomNonce();
  Status status = [&]() -> Status {
    Fd fd(::open(probe_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, kFileMode));
    if (!fd.ok()) return IoError("create", probe_path, errno);
    if (const int write_err = WriteAll(fd.get(), token); write_err != 0) {
      return IoError("write", probe_path, write_err);
    }
    if (const int close_err = fd.Close(); close_err != 0) {
      return IoError("close", probe_path, close_err);
    }
    std::string read_back;
    if (const int read_err = ReadWholeFile(probe_path, read_back); read_err != 0) {
      return IoError("read", probe_path, read_err);
    }
    if (read_back != token) return Error::DataLoss(probe_path + ": read back different bytes");
    return OkStatus();
  }();
  ::unlink(probe_path.c_str());
  ::rmdir(probe_dir.c_str());
  return status;
}

}  // namespace halite::jobs
