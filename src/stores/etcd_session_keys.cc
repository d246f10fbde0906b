#include "halite/stores/etcd_session_keys.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "halite/common/check.h"
#include "halite/wire/crypticle.h"

namespace halite::stores {
namespace {

using nlohmann::json;

std::string StampText(const keys::FileStamp& s) {
  return std::to_string(s.dev) + ":" + std::to_string(s.ino) + ":" + std::to_string(s.size) + ":" +
         std::to_string(s.mtime_ns);
}

class EtcdSessionKeys final : public master::SessionKeys {
 public:
  EtcdSessionKeys(std::vector<std::unique_ptr<cluster::EtcdClient>> clients, std::string prefix,
                  std::chrono::seconds lifetime)
      : prefix_(std::move(prefix)), lifetime_(lifetime) {
    HALITE_CHECK(!clients.empty()) << "EtcdSessionKeys needs a client";
    for (auto& c : clients) free_.push_back(std::move(c));
  }

  Result<master::CrypticlePtr> Get(std::string_view id, const keys::FileStamp& stamp) override {
    const std::string stamp_text = StampText(stamp);
    const std::int64_t now = std::time(nullptr);
    {
      std::lock_guard lock(mu_);
      auto it = cache_.find(std::string(id));
      if (it != cache_.end() && it->second.stamp == stamp_text &&
          now - it->second.made < lifetime_.count()) {
        return it->second.key;
      }
    }
    Result<Entry> loaded = LoadOrCreate(id, stamp_text, now);
    if (!loaded.ok() && loaded.error().code == ErrorCode::kUnavailable) {
      // etcd is away: a minion that moved here (its master died) must still sign in. It gets
      // a key only this master knows; if it moves again before etcd is back, its next
      // master cannot decrypt its requests and it signs in there once more.
      if (!etcd_away_.exchange(true)) {
        spdlog::warn(
            "session keys: etcd is unavailable ({}); new sessions are this master's "
            "own until it is back",
            loaded.error().message);
      }
      loaded = Entry{master::NewSessionKey(), stamp_text, now};
    } else if (loaded.ok() && etcd_away_.exchange(false)) {
      spdlog::info("session keys: etcd answers again");
    }
    if (!loaded.ok()) return loaded.error();
    std::lock_guard lock(mu_);
    cache_[std::string(id)] = *loaded;
    return loaded->key;
  }

  void Forget(std::string_view id) override {
    std::lock_guard lock(mu_);
    cache_.erase(std::string(id));
  }

  std::size_t SizeForTest() override {
    std::lock_guard lock(mu_);
    return cache_.size();
  }

 private:
  struct Entry {
    master::CrypticlePtr key;
    std::string stamp;
    std::int64_t made = 0;
  };

  // A client from the pool for the caller's lifetime.
  class Lease {
   public:
    explicit Lease(EtcdSessionKeys& owner) : owner_(owner) {
      std::unique_lock lock(owner_.pool_mu_);
      owner_.pool_cv_.wait(lock, [this] { return !owner_.free_.empty(); });
      client_ = std::move(owner_.free_.back());
      owner_.free_.pop_back();
    }
    ~Lease() {
      {
        std::lock_guard lock(owner_.pool_mu_);
        owner_.free_.push_back(std::move(client_));
      }
      owner_.pool_cv_.notify_one();
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    cluster::EtcdClient* operator->() { return client_.get(); }

   private:
    EtcdSessionKeys& owner_;
    std::unique_ptr<cluster::EtcdClient> client_;
  };

  static std::string Encode(const master::CrypticlePtr& key, const std::string& stamp,
                            std::int64_t made) {
    return json{{"key", key->key_string()}, {"stamp", stamp}, {"made", made}}.dump();
  }

  // The stored entry when it is usable for `stamp` at `now`; nullopt when it must be replaced.
  std::optional<Entry> Usable(const std::string& etcd_key, const std::string& text,
                              const std::string& stamp, std::int64_t now) const {
    const json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!value.is_object() || !value.contains("key") || !value["key"].is_string() ||
        !value.contains("stamp") || !value["stamp"].is_string() || !value.contains("made") ||
        !value["made"].is_number_integer()) {
      spdlog::warn("session key {} in etcd is malformed; writing a new one", etcd_key);
      return std::nullopt;
    }
    if (value["stamp"].get<std::string>() != stamp) return std::nullopt;
    const auto made = value["made"].get<std::int64_t>();
    if (now - made >= lifetime_.count()) return std::nullopt;
    auto key = wire::Crypticle::FromKeyString(value["key"].get<std::string>());
    if (!key.ok()) {
      spdlog::warn("session key {} in etcd is not a key; writing a new one", etcd_key);
      return std::nullopt;
    }
    return Entry{std::make_shared<const wire::Crypticle>(std::move(*key)), stamp, made};
  }

  Result<Entry> LoadOrCreate(std::string_view id, const std::string& stamp, std::int64_t now) {
    const std::string etcd_key = prefix_ + std::string(id);
    Lease client(*this);
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::int64_t revision = 0;  // 0: create only if absent
      auto kv = client->Get(etcd_key);
      if (kv.ok()) {
        if (auto entry = Usable(etcd_key, kv->value, stamp, now)) return *entry;
        revision = kv->mod_revision;
      } else if (kv.error().code != ErrorCode::kNotFound) {
        return kv.error().WithContext("session key of " + std::string(id));
      }
      Entry entry{master::NewSessionKey(), stamp, now};
      HALITE_ASSIGN_OR_RETURN(
          bool swapped, client->PutIfRevision(etcd_key, Encode(entry.key, stamp, now), revision));
      if (swapped) return entry;
      // Another master wrote it between our read and our swap: read theirs.
    }
    return Error::Unavailable("could not settle the session key " + etcd_key);
  }

  const std::string prefix_;
  const std::chrono::seconds lifetime_;
  std::atomic<bool> etcd_away_{false};
  std::mutex mu_;
  std::unordered_map<std::string, Entry> cache_ HALITE_GUARDED_BY(mu_);
  std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::vector<std::unique_ptr<cluster::EtcdClient>> free_ HALITE_GUARDED_BY(pool_mu_);
};

}  // namespace

std::unique_ptr<master::SessionKeys> MakeEtcdSessionKeys(
    std::vector<std::unique_ptr<cluster::EtcdClient>> clients, std::string prefix,
    std::chrono::seconds lifetime) {
  return std::make_unique<EtcdSessionKeys>(std::move(clients), std::move(prefix), lifetime);
}

}  // namespace halite::stores
