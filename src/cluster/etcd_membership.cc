// Membership on etcd: a lease and a member record under it, kept by the "membership" thread
// that owns the EtcdClient; a "membership-watch" thread with a client of its own follows
// <prefix>leave/ and <prefix>members/ (adjacent in key order: one /v3/watch) and wakes the
// membership thread, which then reads the list. While the watch fails, the list and the leave
// request are read every poll_interval instead; with a watch, every resync_interval.
#include <arpa/inet.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "halite/cluster/curve_keys.h"
#include "halite/cluster/membership.h"
#include "halite/cluster/peer_channel.h"
#include "halite/cluster/shared_state.h"

namespace halite::cluster {

using nlohmann::json;

namespace {

bool IsIp(const std::string& text) {
  in_addr v4{};
  in6_addr v6{};
  return inet_pton(AF_INET, text.c_str(), &v4) == 1 || inet_pton(AF_INET6, text.c_str(), &v6) == 1;
}

class EtcdMembership final : public Membership {
 public:
  EtcdMembership(EtcdMembershipOptions options, std::unique_ptr<EtcdClient> client)
      : options_(std::move(options)),
        client_(std::move(client)),
        watcher_(client_->Clone()),
        tick_(std::min<std::chrono::milliseconds>(options_.poll_interval, options_.ttl / 3)),
        key_prefix_(options_.prefix + "members/"),
        self_trees_(options_.self.trees) {}
  ~EtcdMembership() override { Stop(); }

  Status Start(Listener listener) override {
    if (thread_.joinable()) return Error::FailedPrecondition("membership started twice");
    listener_ = std::move(listener);
    Round();
    thread_ = std::thread([this] { Run(); });
    watch_thread_ = std::thread([this] { Watch(); });
    return OkStatus();
  }

  void SetLeaveHandler(LeaveHandler handler) override { leave_handler_ = std::move(handler); }

  Status Leave() override {
    std::unique_lock lock(mu_);
    if (left_) return leave_status_;
    if (!thread_.joinable()) return Error::FailedPrecondition("membership is not running");
    leave_wanted_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return left_ || stop_; });
    if (!left_) return Error::Unavailable("membership stopped before it could leave");
    return leave_status_;
  }

  bool left() const override {
    std::lock_guard lock(mu_);
    return left_;
  }

  void Stop() override {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    watcher_->InterruptWatches();
    watch_thread_.join();
    thread_.join();
    if (lease_ != 0) {
      if (auto st = client_->Revoke(lease_); !st.ok()) {
        spdlog::warn("membership: cannot deregister {} (it leaves when its lease expires): {}",
                     options_.self.name, st.error().ToString());
      } else {
        spdlog::info("membership: {} deregistered", options_.self.name);
      }
      lease_ = 0;
    }
  }

  std::vector<MemberRecord> Members() const override {
    std::lock_guard lock(mu_);
    std::vector<MemberRecord> out;
    for (const auto& [name, record] : members_) {
      out.push_back(record);
      // This master's own trees are what it last set, as in the file backend, not what etcd
      // echoed back at the last read (which lags a SetTrees by up to one tick).
      if (name == options_.self.name) out.back().trees = self_trees_;
    }
    return out;
  }

  std::string problem() const override {
    std::lock_guard lock(mu_);
    return problem_;
  }

 private:
  void Run() {
    pthread_setname_np(pthread_self(), "membership");
    for (;;) {
      bool leave = false;
      {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, tick_, [this] { return stop_ || leave_wanted_ || news_; });
        if (stop_) return;
        leave = leave_wanted_;
        leave_wanted_ = false;
        if (left_) {  // out for good: nothing to renew or follow
          news_ = false;
          continue;
        }
      }
      if (leave) {
        DoLeave();
      } else {
        Round();
      }
    }
  }

  // One registration/renewal step; a read of the list and a look for a leave request when the
  // watch saw a change under leave/ or members/, or when the last read is resync_interval old
  // (poll_interval while the watch is down).
  void Round() {
    const auto now = std::chrono::steady_clock::now();
    bool read;
    {
      std::lock_guard lock(mu_);
      read = news_ ||
             now - last_read_ >= (watching_ ? options_.resync_interval : options_.poll_interval);
      news_ = false;
    }
    Status st = Register();
    if (st.ok() && read) st = Refresh();
    if (st.ok() && read) st = LookForLeaveRequest();
    if (read) {
      std::lock_guard lock(mu_);
      // After a failed read, read again at the next tick (not at once: etcd may be down).
      last_read_ = st.ok() ? now : std::chrono::steady_clock::time_point{};
    }
    SetProblem(st.ok() ? "" : st.error().message);
  }

  // The watch thread: one /v3/watch over [<prefix>leave/, end of <prefix>members/), from the
  // revision of a read; any event wakes the membership thread. On a failure or a compaction
  // it says so (the membership thread polls meanwhile) and starts again from a fresh read.
  void Watch() {
    pthread_setname_np(pthread_self(), "membership-watch");
    const std::string from = options_.prefix + "leave/";
    const std::string to = EtcdClient::PrefixEnd(key_prefix_);
    std::int64_t next = 0;
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (stop_) return;
      }
      Status st = OkStatus();
      if (next == 0) {
        auto range = watcher_->RangePrefixAt(key_prefix_);
        if (range.ok()) {
          next = range->revision + 1;
          Wake();  // anything before that revision: read it now
        } else {
          st = range.error();
        }
      }
      if (st.ok()) {
        auto batch = watcher_->WatchRange(from, to, next, options_.watch_wait);
        if (!batch.ok()) {
          st = batch.error();
        } else if (batch->compacted) {
          next = 0;
          continue;
        } else {
          next = batch->next_revision;
          if (!batch->events.empty()) Wake();
        }
      }
      if (st.ok()) continue;
      next = 0;
      std::unique_lock lock(mu_);
      if (stop_) return;
      if (watching_) {
        spdlog::warn("membership: cannot watch {}: {} (reading the list every {} ms meanwhile)",
                     key_prefix_, st.error().message, options_.poll_interval.count());
        watching_ = false;
      }
      cv_.wait_for(lock, options_.poll_interval, [this] { return stop_; });
    }
  }

  // The watch is up and saw something (or just started): read the list.
  void Wake() {
    {
      std::lock_guard lock(mu_);
      news_ = true;
      watching_ = true;
    }
    cv_.notify_all();
  }

  Status LookForLeaveRequest() {
    if (!leave_handler_ || leave_seen_) return OkStatus();
    const std::string key = LeaveKey(options_.prefix, options_.self.name);
    HALITE_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> kvs, client_->RangePrefix(key));
    for (const EtcdKeyValue& kv : kvs) {
      if (kv.key != key) continue;  // <name>x: another master's
      LeaveRequest request;
      json j = json::parse(kv.value, nullptr, /*allow_exceptions=*/false);
      if (j.is_object()) {
        if (j.contains("drain_timeout") && j["drain_timeout"].is_number_integer() &&
            j["drain_timeout"].get<std::int64_t>() >= 0) {
          request.drain_timeout = std::chrono::seconds(j["drain_timeout"].get<std::int64_t>());
        }
        if (j.contains("requested_by") && j["requested_by"].is_string()) {
          request.requested_by = j["requested_by"].get<std::string>();
        }
        if (j.contains("requested_at") && j["requested_at"].is_number_integer()) {
          request.requested_at = j["requested_at"].get<std::int64_t>();
        }
      }
      leave_seen_ = true;
      spdlog::warn("membership: {} asked to leave the cluster by {} (drain for up to {} s)",
                   options_.self.name, request.requested_by.empty() ? "?" : request.requested_by,
                   request.drain_timeout.count());
      leave_handler_(request);
    }
    return OkStatus();
  }

  // Revokes the lease, deletes the request, tells the listener every other member left.
  void DoLeave() {
    Status st = OkStatus();
    if (lease_ != 0) st = client_->Revoke(lease_);
    lease_ = 0;  // not renewed any more: after a failed revoke it expires within the TTL
    if (auto deleted = client_->Delete(LeaveKey(options_.prefix, options_.self.name));
        !deleted.ok()) {
      spdlog::warn("membership: cannot delete the leave request (it expires with its lease): {}",
                   deleted.error().message);
    }
    std::vector<std::string> others;
    {
      std::lock_guard lock(mu_);
      for (const auto& [name, record] : members_) {
        if (name != options_.self.name) others.push_back(name);
      }
      members_.clear();
      problem_.clear();
      left_ = true;
      leave_status_ = st;
    }
    cv_.notify_all();
    if (st.ok()) {
      spdlog::warn("membership: {} left the cluster (lease revoked)", options_.self.name);
    } else {
      spdlog::error(
          "membership: {} left, but the lease could not be revoked (it expires within {} s): {}",
          options_.self.name, options_.ttl.count(), st.error().message);
    }
    if (listener_ && !others.empty()) listener_({}, others);
  }

  void SetTrees(std::map<std::string, std::string> trees) override {
    std::lock_guard lock(mu_);
    if (trees == self_trees_) return;
    self_trees_ = std::move(trees);
    trees_dirty_ = true;
  }

  // This master's record with its latest trees.
  MemberRecord SelfRecord() {
    std::lock_guard lock(mu_);
    MemberRecord self = options_.self;
    self.trees = self_trees_;
    return self;
  }

  // After `written` reached etcd: clean, unless the trees changed again meanwhile.
  void Written(const MemberRecord& written) {
    std::lock_guard lock(mu_);
    if (written.trees == self_trees_) trees_dirty_ = false;
  }

  Status Register() {
    const auto now = std::chrono::steady_clock::now();
    bool dirty;
    {
      std::lock_guard lock(mu_);
      dirty = trees_dirty_;
    }
    if (lease_ != 0 && dirty) {
      // New trees: the same record under the same lease.
      const MemberRecord self = SelfRecord();
      HALITE_RETURN_IF_ERROR(
          client_->Put(key_prefix_ + options_.self.name, MemberRecordToJson(self), lease_));
      Written(self);
    }
    if (lease_ != 0 && now - renewed_ < options_.ttl / 3) return OkStatus();
    if (lease_ != 0) {
      auto ttl = client_->KeepAlive(lease_);
      if (ttl.ok()) {
        renewed_ = now;
        return OkStatus();
      }
      if (ttl.error().code != ErrorCode::kNotFound) return ttl.error();
      spdlog::warn(
          "membership: the lease of {} expired (etcd was away too long); registering again",
          options_.self.name);
      lease_ = 0;
    }
    HALITE_ASSIGN_OR_RETURN(std::int64_t lease, client_->GrantLease(options_.ttl));
    const MemberRecord self = SelfRecord();
    HALITE_RETURN_IF_ERROR(
        client_->Put(key_prefix_ + options_.self.name, MemberRecordToJson(self), lease));
    Written(self);
    lease_ = lease;
    renewed_ = now;
    spdlog::info("membership: {} registered at {}{} (lease ttl {} s)", options_.self.name,
                 key_prefix_, options_.self.name, options_.ttl.count());
    return OkStatus();
  }

  Status Refresh() {
    std::vector<std::string> ignored;
    HALITE_ASSIGN_OR_RETURN(std::vector<MemberRecord> records,
                            ReadMembers(*client_, options_.prefix, &ignored));
    for (const std::string& why : ignored) {
      if (bad_keys_.insert(why).second) spdlog::warn("membership: ignoring {}", why);
    }
    std::map<std::string, MemberRecord> now;
    for (MemberRecord& record : records) now.emplace(record.name, std::move(record));
    std::vector<MemberRecord> changed;
    std::vector<std::string> left;
    std::map<std::string, MemberRecord> before;
    {
      std::lock_guard lock(mu_);
      before = members_;
      members_ = now;
    }
    for (const auto& [name, record] : now) {
      if (name == options_.self.name) continue;
      auto it = before.find(name);
      if (it == before.end() || !(it->second == record)) {
        spdlog::info("membership: {} {} ({}:{})", name, it == before.end() ? "joined" : "changed",
                     record.address, record.peer_port);
        changed.push_back(record);
      }
    }
    for (const auto& [name, record] : before) {
      if (name == options_.self.name || now.count(name) != 0) continue;
      spdlog::info("membership: {} left", name);
      left.push_back(name);
    }
    if ((!changed.empty() || !left.empty()) && listener_) listener_(changed, left);
    return OkStatus();
  }

  void SetProblem(const std::string& problem) {
    std::lock_guard lock(mu_);
    if (problem == problem_) return;
    if (problem.empty()) {
      spdlog::info("membership: etcd answers again");
    } else {
      spdlog::error("membership: {} (the last known member list stays in use)", problem);
    }
    problem_ = problem;
  }

  const EtcdMembershipOptions options_;
  const std::unique_ptr<EtcdClient> client_;   // the membership thread's (Start/Stop: caller's)
  const std::unique_ptr<EtcdClient> watcher_;  // the watch thread's
  const std::chrono::milliseconds tick_;       // the membership thread's longest sleep
  const std::string key_prefix_;
  Listener listener_;
  LeaveHandler leave_handler_;
  bool leave_seen_ = false;  // the membership thread's
  std::thread thread_;
  std::thread watch_thread_;
  std::int64_t lease_ = 0;
  std::chrono::steady_clock::time_point renewed_;
  std::set<std::string> bad_keys_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool leave_wanted_ = false;  // Leave() was called
  bool news_ = false;          // the watch saw a change (or a read failed): read the list
  bool watching_ = false;      // the watch is up: no need to poll
  std::chrono::steady_clock::time_point last_read_{};
  bool left_ = false;
  Status leave_status_ = OkStatus();
  std::map<std::string, MemberRecord> members_;
  std::string problem_;
  std::map<std::string, std::string> self_trees_;  // guarded by mu_
  bool trees_dirty_ = false;                       // guarded by mu_
};

}  // namespace

std::string MemberRecordToJson(const MemberRecord& r) {
  return json{{"name", r.name},
              {"address", r.address},
              {"peer_port", r.peer_port},
              {"publish_port", r.publish_port},
              {"ret_port", r.ret_port},
              {"health_port", r.health_port},
              {"curve_public_key", r.curve_public_key},
              {"version", r.version},
              {"started", r.started},
              {"trees", r.trees}}
      .dump();
}

Result<MemberRecord> MemberRecordFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Error::InvalidArgument("member record is not a JSON object");
  MemberRecord r;
  auto str = [&](const char* key, std::string& out) {
    if (j.contains(key) && j[key].is_string()) out = j[key].get<std::string>();
  };
  auto port = [&](const char* key, std::uint16_t& out) {
    if (j.contains(key) && j[key].is_number_unsigned() && j[key].get<std::uint64_t>() <= 65535) {
      out = static_cast<std::uint16_t>(j[key].get<std::uint64_t>());
    }
  };
  str("name", r.name);
  str("address", r.address);
  str("curve_public_key", r.curve_public_key);
  str("version", r.version);
  port("peer_port", r.peer_port);
  port("publish_port", r.publish_port);
  port("ret_port", r.ret_port);
  port("health_port", r.health_port);
  if (j.contains("started") && j["started"].is_number_integer()) {
    r.started = j["started"].get<std::int64_t>();
  }
  if (j.contains("trees") && j["trees"].is_object()) {
    for (const auto& [tree, digest] : j["trees"].items()) {
      if (digest.is_string() && tree.size() <= 300) r.trees[tree] = digest.get<std::string>();
    }
  }
  if (!IsValidPeerId(r.name)) return Error::InvalidArgument("member record: bad name");
  if (!IsIp(r.address)) return Error::InvalidArgument("member record: address is not an IP");
  if (r.peer_port == 0) return Error::InvalidArgument("member record: no peer_port");
  if (!ParseCurvePublicKey(r.curve_public_key).ok()) {
    return Error::InvalidArgument("member record: curve_public_key is not a z85 CURVE key");
  }
  return r;
}

std::unique_ptr<Membership> MakeEtcdMembership(EtcdMembershipOptions options,
                                               std::unique_ptr<EtcdClient> client) {
  return std::make_unique<EtcdMembership>(std::move(options), std::move(client));
}

Result<std::vector<MemberRecord>> ReadMembers(EtcdClient& client, const std::string& prefix,
                                              std::vector<std::string>* ignored) {
  const std::string key_prefix = prefix + "members/";
  HALITE_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> kvs, client.RangePrefix(key_prefix));
  std::vector<MemberRecord> out;
  for (const EtcdKeyValue& kv : kvs) {
    auto record = MemberRecordFromJson(kv.value);
    if (!record.ok() || record->name != kv.key.substr(key_prefix.size())) {
      if (ignored != nullptr) {
        ignored->push_back(
            kv.key + ": " +
            (record.ok() ? "its name differs from its key" : record.error().message));
      }
      continue;
    }
    out.push_back(std::move(*record));
  }
  return out;  // etcd answers in key order: by name
}

std::string LeaveKey(const std::string& prefix, const std::string& name) {
  return prefix + "leave/" + name;
}

Status RequestLeave(EtcdClient& client, const std::string& prefix, const std::string& name,
                    const LeaveRequest& request) {
  HALITE_ASSIGN_OR_RETURN(std::int64_t lease,
                          client.GrantLease(request.drain_timeout + std::chrono::seconds(60)));
  return client.Put(LeaveKey(prefix, name),
                    json{{"drain_timeout", request.drain_timeout.count()},
                         {"requested_by", request.requested_by},
                         {"requested_at", request.requested_at}}
                        .dump(),
                    lease);
}

}  // namespace halite::cluster

namespace halite::cluster {

Membership::Listener PeerLinksFollowing(PeerChannel& channel) {
  return
      [&channel](const std::vector<MemberRecord>& changed, const std::vector<std::string>& left) {
        for (const std::string& name : left) channel.RemovePeer(name);
        for (const MemberRecord& member : changed) {
          channel.AddPeer({member.name, TcpEndpoint(member.address, member.peer_port)},
                          member.curve_public_key);
        }
      };
}

}  // namespace halite::cluster
