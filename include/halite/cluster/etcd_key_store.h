// EtcdKeyStore: the minion keys of a cluster in etcd instead of a shared folder (issue 17),
// under `<prefix>minions/<id>`, `<prefix>minions_pre/<id>`, ... (Salt's directory names, so
// `etcdctl get --prefix` reads like `ls pki/`), each value the key text verbatim.
//
// Reads come from an in-memory copy, read whole at start and then fed by etcd's watch (a
// thread of the store's, "etcd-keys", with a client of its own: each call waits up to
// `refresh` for changes and returns only them; a compacted history or any failure is followed
// by one full range read): a known minion's sign-in makes no etcd round trip, and an idle
// cluster moves no key data at all. A key the copy does not hold is asked of etcd before the answer
// is "none" (a minion accepted on another master a moment ago is not taken for a new one). Writes
// and removals go to etcd at once and are durable when etcd answers (a raft commit), so
// AfterDurable calls back at once. List reads etcd (a fresh listing), or the copy when
// etcd cannot be reached. When etcd cannot be reached, the copy keeps serving known minions
// (reads, stamps, listings); writes, removals and keys the copy does not hold fail with
// Unavailable.
//
// Autosign stubs (`<prefix>minions_autosign/<id>`) hold the Unix time they were made,
// e.g. `etcdctl put /halite/keys/minions_autosign/web1 "$(date +%s)"`; a value that is not a
// number never expires. Consuming one is a compare-and-delete, so two masters cannot both.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>

#include "halite/cluster/etcd_client.h"
#include "halite/keys/key_store.h"

namespace halite::cluster {

struct EtcdKeyStoreOptions {
  std::string prefix = "/halite/keys/";  // ends with '/'
  std::chrono::milliseconds refresh{1000};
};

class EtcdKeyStore final : public keys::KeyStore {
 public:
  // Reads every key once (Unavailable when etcd cannot be reached: a master does not start
  // blind) and starts the refresh thread.
  static Result<std::unique_ptr<EtcdKeyStore>> Open(std::unique_ptr<EtcdClient> client,
                                                    EtcdKeyStoreOptions options);
  ~EtcdKeyStore() override;

  // KeyStore:
  Result<std::string> Read(keys::KeyState state, std::string_view id) override;
  Status Write(keys::KeyState state, std::string_view id, std::string_view pem) override;
  void AfterDurable(std::function<void(Status)> done) override { done(OkStatus()); }
  Status Remove(keys::KeyState state, std::string_view id) override;
  Result<std::vector<std::string>> List(keys::KeyState state) override;
  Result<bool> ConsumeAutosignStub(std::string_view id, std::chrono::minutes timeout) override;
  Result<bool> IsDirectory(keys::KeyState, std::string_view id) override;
  Result<keys::FileStamp> Stamp(keys::KeyState state, std::string_view id) override;
  Status Available() override { return OkStatus(); }  // the copy serves when etcd does not
  const std::filesystem::path& root() const override { return root_; }

  // One full read now (start-up, and after the watch failed or was compacted away).
  Status Refresh();
  // Full reads so far (tests check that an idle watch does none).
  std::uint64_t full_reads() const { return full_reads_.load(); }

 private:
  struct Entry {
    std::string pem;
    std::int64_t mod_revision = 0;
  };
  EtcdKeyStore(std::unique_ptr<EtcdClient> client, EtcdKeyStoreOptions options);
  Result<std::string> KeyName(keys::KeyState state, std::string_view id) const;
  // The copy's entry, or etcd's answer when the copy has none.
  Result<Entry> Lookup(const std::string& key);
  void RefreshLoop();
  // One watch call: applies the changes since next_revision_ (a full Refresh when etcd
  // compacted that history away).
  Status Follow();

  const EtcdKeyStoreOptions options_;
  const std::filesystem::path root_;  // "etcd:<prefix>", for messages
  std::mutex client_mu_;              // EtcdClient is not thread-safe
  std::unique_ptr<EtcdClient> client_;
  std::shared_mutex copy_mu_;
  std::map<std::string, Entry, std::less<>> copy_;  // full etcd key -> entry
  std::int64_t next_revision_ = 0;                  // guarded by copy_mu_: where to watch from
  std::unique_ptr<EtcdClient> watcher_;             // the refresher thread's own
  std::atomic<std::uint64_t> full_reads_{0};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread refresher_;
};

}  // namespace halite::cluster
