// A small etcd v3 client: the calls halite's membership and shared state need, through etcd's JSON
// gateway
// (`POST /v3/...` with base64 keys and values) over Boost.Beast. The gateway and not gRPC:
// the build has no grpc++ code generation and the gateway needs no Debian package beyond
// Boost, which halite already uses.
//
// Every call has a deadline (EtcdOptions::timeout, per endpoint tried) and returns an error
// as a value: Unavailable when no endpoint answered (connection refused, timeout), Internal
// when etcd answered something that is not what the API promises. The client logs nothing;
// its callers do (one line per change of state, not per failure). Not thread-safe: one owner.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "halite/common/result.h"

namespace halite::cluster {

struct EtcdOptions {
  // "http://127.0.0.1:2379" or "https://10.0.0.5:2379": IP literals only (halite never
  // resolves names). Tried in order, starting with the last one that answered.
  std::vector<std::string> endpoints;
  std::chrono::milliseconds timeout{2000};
  // TLS for https endpoints (PEM files). The server's certificate must chain to `cacert`
  // (the system's CAs when empty) and name the endpoint's IP address in its subjectAltName.
  // `cert` and `key`: this client's certificate, for etcd's --client-cert-auth; both or
  // neither.
  std::string cacert{};
  std::string cert{};
  std::string key{};
};

struct EtcdKeyValue {
  std::string key;
  std::string value;
  std::int64_t lease = 0;
  std::int64_t mod_revision = 0;
};

// A range read with the revision it was read at (the store's revision then).
struct EtcdRange {
  std::vector<EtcdKeyValue> kvs;
  std::int64_t revision = 0;
};

// A change to a watched key: written (kv holds the new value) or deleted (kv.key only).
struct EtcdEvent {
  bool deleted = false;
  EtcdKeyValue kv;
};

// What one WatchPrefix call saw: the changes from its start revision, in order, and where the
// next call starts. `compacted`: etcd no longer holds the history from the start revision (it
// was compacted away); read the whole range again and watch from its revision.
struct EtcdWatchBatch {
  std::vector<EtcdEvent> events;
  std::int64_t next_revision = 0;
  bool compacted = false;
};

class EtcdClient {
 public:
  virtual ~EtcdClient() = default;
  // A new lease of `ttl`; its id.
  virtual Result<std::int64_t> GrantLease(std::chrono::seconds ttl) = 0;
  // Renews the lease once; its TTL now. NotFound when the lease expired or was revoked.
  virtual Result<std::int64_t> KeepAlive(std::int64_t lease) = 0;
  virtual Status Revoke(std::int64_t lease) = 0;
  // lease 0: no lease.
  virtual Status Put(const std::string& key, const std::string& value, std::int64_t lease) = 0;
  // Deletes `key` (exactly that key); OK when it did not exist.
  virtual Status Delete(const std::string& key) = 0;
  // Every key that starts with `prefix`, in key order.
  virtual Result<std::vector<EtcdKeyValue>> RangePrefix(const std::string& prefix) = 0;
  // The same, with the revision it was read at: a watch from revision + 1 misses nothing.
  virtual Result<EtcdRange> RangePrefixAt(const std::string& prefix) = 0;
  // The changes to keys under `prefix` from `start_revision` on (etcd's /v3/watch), waiting up
  // to `wait` for the first: an empty batch (next_revision = start_revision) when nothing
  // changed in that time. Blocks for up to `wait` plus the timeout: give it a client of its
  // own (Clone).
  Result<EtcdWatchBatch> WatchPrefix(const std::string& prefix, std::int64_t start_revision,
                                     std::chrono::milliseconds wait) {
    return WatchRange(prefix, PrefixEnd(prefix), start_revision, wait);
  }
  // The same for the keys in [from, to): several adjacent prefixes in one watch.
  virtual Result<EtcdWatchBatch> WatchRange(const std::string& from, const std::string& to,
                                            std::int64_t start_revision,
                                            std::chrono::milliseconds wait) = 0;
  // The first key after every key that starts with `prefix` (etcd's range_end for a prefix).
  static std::string PrefixEnd(const std::string& prefix);
  // A client with the same endpoints and options (for a second thread).
  virtual std::unique_ptr<EtcdClient> Clone() const = 0;
  // From any thread: a WatchPrefix waiting now, and every later one, returns at once
  // (Unavailable). For stopping the thread that watches; the other calls are unaffected.
  virtual void InterruptWatches() = 0;
  // One key; NotFound when there is none.
  virtual Result<EtcdKeyValue> Get(const std::string& key) = 0;
  // Writes `value` only if the key's mod_revision is still `expected` (0: only if the key does
  // not exist), in one etcd transaction. False when it was not (someone else wrote first).
  virtual Result<bool> PutIfRevision(const std::string& key, const std::string& value,
                                     std::int64_t expected) = 0;
  // Deletes the key only if its mod_revision is still `expected` (> 0). False when it was
  // not, or the key is gone: someone else changed or removed it first.
  virtual Result<bool> DeleteIfRevision(const std::string& key, std::int64_t expected) = 0;
};

// An endpoint that halite can use: "http://<IPv4 or [IPv6] literal>:<port>", or why not.
Status CheckEtcdEndpoint(const std::string& endpoint);

// InvalidArgument when an endpoint fails CheckEtcdEndpoint or there is none.
Result<std::unique_ptr<EtcdClient>> MakeEtcdClient(EtcdOptions options);

}  // namespace halite::cluster
