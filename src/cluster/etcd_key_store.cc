// EtcdKeyStore: minion keys in etcd with an in-memory copy (etcd_key_store.h).
#include "halite/cluster/etcd_key_store.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <ctime>

namespace halite::cluster {

namespace {

constexpr std::string_view kAutosignDir = "minions_autosign";
// A removal that keeps losing its compare-and-delete to other writers gives up after this.
constexpr int kRemoveTries = 5;

Status CheckId(std::string_view id) {
  if (!keys::ValidMinionId(id)) return Error::InvalidArgument("invalid minion id");
  return OkStatus();
}

}  // namespace

EtcdKeyStore::EtcdKeyStore(std::unique_ptr<EtcdClient> client, EtcdKeyStoreOptions options)
    : options_(std::move(options)), root_("etcd:" + options_.prefix), client_(std::move(client)) {}

Result<std::unique_ptr<EtcdKeyStore>> EtcdKeyStore::Open(std::unique_ptr<EtcdClient> client,
                                                         EtcdKeyStoreOptions options) {
  if (!client) return Error::InvalidArgument("etcd key store: no client");
  if (options.prefix.empty() || options.prefix.back() != '/') {
    return Error::InvalidArgument("etcd key store: the prefix must end with '/'");
  }
  if (options.refresh.count() <= 0) {
    return Error::InvalidArgument("etcd key store: the refresh period must be > 0");
  }
  std::unique_ptr<EtcdKeyStore> store(new EtcdKeyStore(std::move(client), std::move(options)));
  if (auto st = store->Refresh(); !st.ok()) {
    return Error{st.error().code, "cannot read the minion keys from etcd: " + st.error().message};
  }
  store->watcher_ = store->client_->Clone();
  store->refresher_ = std::thread([s = store.get()] { s->RefreshLoop(); });
  return store;
}

EtcdKeyStore::~EtcdKeyStore() {
  {
    std::lock_guard lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (watcher_) watcher_->InterruptWatches();
  if (refresher_.joinable()) refresher_.join();
}

void EtcdKeyStore::RefreshLoop() {
  pthread_setname_np(pthread_self(), "etcd-keys");
  bool failing = false;
  std::unique_lock lock(stop_mu_);
  while (!stop_) {
    lock.unlock();
    // After a failure, one full read brings the copy back (etcd may have compacted the
    // history the watch would need); otherwise the watch returns only what changed.
    Status st = failing ? Refresh() : Follow();
    lock.lock();
    if (stop_) break;  // a watch interrupted by the destructor is no failure
    lock.unlock();
    // One line per change of state, not one per failed round.
    if (!st.ok() && !failing) {
      spdlog::error("minion keys: cannot follow etcd ({}); serving the keys last read",
                    st.error().message);
    } else if (st.ok() && failing) {
      spdlog::info("minion keys: etcd answers again");
    }
    failing = !st.ok();
    lock.lock();
    // The watch waited already; after a failure, wait before trying again.
    if (failing) stop_cv_.wait_for(lock, options_.refresh, [this] { return stop_; });
  }
}

Status EtcdKeyStore::Refresh() {
  Result<EtcdRange> all = [&] {
    std::lock_guard lock(client_mu_);
    return client_->RangePrefixAt(options_.prefix);
  }();
  if (!all.ok()) return all.error();
  full_reads_++;
  std::map<std::string, Entry, std::less<>> fresh;
  for (auto& kv : all->kvs)
    fresh.emplace(std::move(kv.key), Entry{std::move(kv.value), kv.mod_revision});
  std::unique_lock lock(copy_mu_);
  copy_ = std::move(fresh);
  next_revision_ = all->revision + 1;
  return OkStatus();
}

Status EtcdKeyStore::Follow() {
  std::int64_t start = 0;
  {
    std::shared_lock lock(copy_mu_);
    start = next_revision_;
  }
  HALITE_ASSIGN_OR_RETURN(EtcdWatchBatch batch,
                          watcher_->WatchPrefix(options_.prefix, start, options_.refresh));
  if (batch.compacted) return Refresh();
  std::unique_lock lock(copy_mu_);
  for (auto& event : batch.events) {
    auto it = copy_.find(event.kv.key);
    // A write of this master's may be in the copy already, newer than an event still on its
    // way: an event never takes the copy back in time.
    if (it != copy_.end() && it->second.mod_revision > event.kv.mod_revision) continue;
    if (event.deleted) {
      if (it != copy_.end()) copy_.erase(it);
    } else {
      copy_.insert_or_assign(std::move(event.kv.key),
                             Entry{std::move(event.kv.value), event.kv.mod_revision});
    }
  }
  next_revision_ = std::max(next_revision_, batch.next_revision);
  return OkStatus();
}

Result<std::string> EtcdKeyStore::KeyName(keys::KeyState state, std::string_view id) const {
  HALITE_RETURN_IF_ERROR(CheckId(id));
  return options_.prefix + std::string(keys::KeyStateDir(state)) + "/" + std::string(id);
}

Result<EtcdKeyStore::Entry> EtcdKeyStore::Lookup(const std::string& key) {
  {
    std::shared_lock lock(copy_mu_);
    if (auto it = copy_.find(key); it != copy_.end()) return it->second;
  }
  // Not in the copy: etcd is the judge (a key written elsewhere since the last refresh).
  Result<EtcdKeyValue> kv = [&] {
    std::lock_guard lock(client_mu_);
    return client_->Get(key);
  }();
  if (!kv.ok() && kv.error().code == ErrorCode::kUnavailable) {
    // Without etcd the copy, a full read of every key, is the judge: nobody can have written
    // a key since etcd went away (writes go through it), so what it lacks is absent but for
    // writes in the last refresh period. A known minion then signs in on any master (its
    // rejected/denied/pending checks are misses); a new key still cannot be written.
    return Error::NotFound("no key " + key + " (judged from the copy: etcd is unavailable)");
  }
  if (!kv.ok()) return kv.error();
  Entry entry{std::move(kv->value), kv->mod_revision};
  std::unique_lock lock(copy_mu_);
  copy_.insert_or_assign(key, entry);
  return entry;
}

Result<std::string> EtcdKeyStore::Read(keys::KeyState state, std::string_view id) {
  HALITE_ASSIGN_OR_RETURN(std::string key, KeyName(state, id));
  HALITE_ASSIGN_OR_RETURN(Entry entry, Lookup(key));
  return std::move(entry.pem);
}

Result<keys::FileStamp> EtcdKeyStore::Stamp(keys::KeyState state, std::string_view id) {
  HALITE_ASSIGN_OR_RETURN(std::string key, KeyName(state, id));
  HALITE_ASSIGN_OR_RETURN(Entry entry, Lookup(key));
  // Every put makes a new mod_revision, as a rename makes a new inode: a key removed and
  // accepted again is a new version even with the same text.
  keys::FileStamp stamp;
  stamp.dev = 0x65746364;  // "etcd": never a real device number next to file stamps
  stamp.ino = static_cast<std::uint64_t>(entry.mod_revision);
  stamp.size = entry.pem.size();
  return stamp;
}

Status EtcdKeyStore::Write(keys::KeyState state, std::string_view id, std::string_view pem) {
  HALITE_ASSIGN_OR_RETURN(std::string key, KeyName(state, id));
  Result<EtcdKeyValue> written = [&]() -> Result<EtcdKeyValue> {
    std::lock_guard lock(client_mu_);
    HALITE_RETURN_IF_ERROR(client_->Put(key, std::string(pem), 0));
    return client_->Get(key);  // its mod_revision, for Stamp
  }();
  if (!written.ok()) {
    // Put succeeded if only the Get failed: the copy forgets the key, the next Lookup asks.
    std::unique_lock lock(copy_mu_);
    copy_.erase(key);
    return written.error();
  }
  std::unique_lock lock(copy_mu_);
  copy_.insert_or_assign(key, Entry{std::move(written->value), written->mod_revision});
  return OkStatus();
}

Status EtcdKeyStore::Remove(keys::KeyState state, std::string_view id) {
  HALITE_ASSIGN_OR_RETURN(std::string key, KeyName(state, id));
  for (int attempt = 0; attempt < kRemoveTries; ++attempt) {
    Result<bool> removed = [&]() -> Result<bool> {
      std::lock_guard lock(client_mu_);
      HALITE_ASSIGN_OR_RETURN(EtcdKeyValue kv, client_->Get(key));
      return client_->DeleteIfRevision(key, kv.mod_revision);
    }();
    if (!removed.ok() && removed.error().code == ErrorCode::kNotFound) {
      std::unique_lock lock(copy_mu_);
      copy_.erase(key);
      return Error::NotFound("no key for '" + std::string(id) + "' in " +
                             std::string(keys::KeyStateDir(state)));
    }
    if (!removed.ok()) return removed.error();
    if (*removed) {
      std::unique_lock lock(copy_mu_);
      copy_.erase(key);
      return OkStatus();
    }
    // Rewritten between the read and the delete: read it again and retry.
  }
  return Error::Unavailable("etcd key store: the key of '" + std::string(id) +
                            "' kept changing while it was being removed");
}

Result<std::vector<std::string>> EtcdKeyStore::List(keys::KeyState state) {
  const std::string dir = options_.prefix + std::string(keys::KeyStateDir(state)) + "/";
  Result<std::vector<EtcdKeyValue>> kvs = [&] {
    std::lock_guard lock(client_mu_);
    return client_->RangePrefix(dir);
  }();
  if (!kvs.ok() && kvs.error().code == ErrorCode::kUnavailable) {
    // Without etcd the copy answers (targeting keeps working for the minions known); the
    // refresher has logged that etcd is away.
    std::vector<EtcdKeyValue> known;
    std::shared_lock lock(copy_mu_);
    for (auto it = copy_.lower_bound(dir); it != copy_.end() && it->first.starts_with(dir); ++it) {
      known.push_back({it->first, it->second.pem, 0, it->second.mod_revision});
    }
    kvs = std::move(known);
  }
  if (!kvs.ok()) return kvs.error();
  std::vector<std::string> ids;
  for (const auto& kv : *kvs) {
    std::string id = kv.key.substr(dir.size());
    // Only direct children with valid ids, as the files listing skips what is not a key.
    if (keys::ValidMinionId(id) && id.front() != '.') ids.push_back(std::move(id));
  }
  return ids;  // etcd returns keys in byte order, which is std::string's
}

Result<bool> EtcdKeyStore::ConsumeAutosignStub(std::string_view id, std::chrono::minutes timeout) {
  HALITE_RETURN_IF_ERROR(CheckId(id));
  const std::string dir = options_.prefix + std::string(kAutosignDir) + "/";
  const std::string mine = dir + std::string(id);
  std::lock_guard lock(client_mu_);
  HALITE_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> stubs, client_->RangePrefix(dir));
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  bool found = false;
  std::int64_t revision = 0;
  for (const auto& stub : stubs) {
    std::int64_t made = 0;
    const auto* first = stub.value.data();
    const auto* last = first + stub.value.size();
    const auto [end, ec] = std::from_chars(first, last, made);
    const bool dated = ec == std::errc() && end == last;
    if (timeout.count() > 0 && dated &&
        now - made > std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) {
      // Expired (Salt sweeps them all); lost races are fine, someone else removed it.
      (void)client_->DeleteIfRevision(stub.key, stub.mod_revision);
      continue;
    }
    if (stub.key == mine) {
      found = true;
      revision = stub.mod_revision;
    }
  }
  if (!found) return false;
  return client_->DeleteIfRevision(mine, revision);
}

Result<bool> EtcdKeyStore::IsDirectory(keys::KeyState, std::string_view id) {
  HALITE_RETURN_IF_ERROR(CheckId(id));
  return false;  // etcd has no directories
}

}  // namespace halite::cluster
