// Membership on the shared folder (cluster_backend: files): the configured masters, each
// writing its record to <dir>/<name>.json (membership.h).
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "halite/cluster/membership.h"
#include "halite/keys/fs.h"

namespace halite::cluster {

namespace {

class FileMembership final : public Membership {
 public:
  explicit FileMembership(FileMembershipOptions options) : options_(std::move(options)) {}
  ~FileMembership() override { Stop(); }

  Status Start(Listener listener) override {
    if (thread_.joinable()) return Error::FailedPrecondition("membership started twice");
    Round();
    // The members are fixed: the listener hears of every peer once.
    if (listener) listener(PeerRecords(), {});
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "membership");
      std::unique_lock lock(mu_);
      while (!cv_.wait_for(lock, options_.period, [this] { return stop_; })) {
        lock.unlock();
        Round();
        lock.lock();
      }
    });
    return OkStatus();
  }

  void SetLeaveHandler(LeaveHandler) override {}  // nobody can ask: there is no request key

  Status Leave() override {
    return Error::FailedPrecondition(
        "cluster_backend: files has no live leave: remove the master from cluster_peers on "
        "every master and restart them (docs/cluster.md)");
  }
  bool left() const override { return false; }

  void Stop() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void SetTrees(std::map<std::string, std::string> trees) override {
    std::lock_guard lock(mu_);
    self_.trees = std::move(trees);
  }

  std::vector<MemberRecord> Members() const override {
    std::vector<MemberRecord> members = PeerRecords();
    {
      std::lock_guard lock(mu_);
      members.push_back(self_);
    }
    std::sort(members.begin(), members.end(),
              [](const MemberRecord& a, const MemberRecord& b) { return a.name < b.name; });
    return members;
  }

  std::string problem() const override {
    std::lock_guard lock(mu_);
    return problem_;
  }

 private:
  std::filesystem::path RecordPath(const std::string& name) const {
    return options_.dir / (name + ".json");
  }

  // The peers' records as last read; a peer that has written none yet is its name and address.
  std::vector<MemberRecord> PeerRecords() const {
    std::lock_guard lock(mu_);
    std::vector<MemberRecord> out;
    for (const std::string& name : options_.peers) {
      auto it = peers_.find(name);
      if (it != peers_.end()) {
        out.push_back(it->second);
      } else {
        MemberRecord bare;
        bare.name = name;
        bare.address = name;
        out.push_back(std::move(bare));
      }
    }
    return out;
  }

  // Writes this master's record when it changed, and reads the peers'.
  void Round() {
    MemberRecord self;
    {
      std::lock_guard lock(mu_);
      self = self_;
    }
    std::string problem;
    if (!written_ || *written_ != self) {
      Status st = keys::EnsureDir(options_.dir, 0700);
      if (st.ok())
        st = keys::WriteFileAtomic(RecordPath(self.name), MemberRecordToJson(self), 0600);
      if (st.ok()) {
        written_ = self;
      } else {
        problem = "cannot write " + RecordPath(self.name).string() + ": " + st.error().message;
      }
    }
    std::map<std::string, MemberRecord> peers;
    for (const std::string& name : options_.peers) {
      auto text = keys::ReadFile(RecordPath(name));
      if (!text.ok()) continue;  // not written yet (that master has not started)
      auto record = MemberRecordFromJson(*text);
      if (!record.ok() || record->name != name) continue;  // a torn or foreign file
      peers.emplace(name, std::move(*record));
    }
    std::lock_guard lock(mu_);
    peers_ = std::move(peers);
    if (problem != problem_) {
      if (!problem.empty()) spdlog::error("membership: {}", problem);
      problem_ = std::move(problem);
    }
  }

  const FileMembershipOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                          // guarded by mu_
  MemberRecord self_ = options_.self;          // guarded by mu_
  std::map<std::string, MemberRecord> peers_;  // guarded by mu_
  std::string problem_;                        // guarded by mu_
  std::optional<MemberRecord> written_;        // the membership thread's (and Start's)
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Membership> MakeFileMembership(FileMembershipOptions options) {
  return std::make_unique<FileMembership>(std::move(options));
}

}  // namespace halite::cluster
