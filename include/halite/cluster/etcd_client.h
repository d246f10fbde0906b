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
  // "http://127.0.0.1:2379": IP literals only (halite never resolves names). https is not
  // supported yet. Tried in order, starting with the last one that answered.
  std::vector<std::string> endpoints;
  std::chrono::milliseconds timeout{2000};
};

struct EtcdKeyValue {
  std::string key;
  std::string value;
  std::int64_t lease = 0;
  std::int64_t mod_revision = 0;
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
