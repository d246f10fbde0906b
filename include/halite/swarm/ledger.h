// halite-swarm's ledger (--ledger FILE): what every simulated minion did, for tools/chaos to
// check against the job cache. One tab-separated line per record, appended:
//   <unix time, microseconds> run  <minion> <jid> <fun>   a job started (after the jid dedupe)
//   <unix time, microseconds> ack  <minion> <jid>         a master acknowledged its return
//   <unix time, microseconds> up   <minion>               publish subscription handshake done
//   <unix time, microseconds> down <minion>               publish subscription lost
//   <unix time, microseconds> lost <count>                records dropped: the queue was full
// and a first line "# halite-swarm ledger <pid>". A writer thread writes each batch with one
// write() (so a crash of the swarm loses nothing already handed over) and then fdatasync()s
// it (so a crash of the machine loses at most the batch in flight).
// Thread-safe: minions on any loop call the JobJournal methods; they never block on disk.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "halite/common/check.h"
#include "halite/common/result.h"
#include "halite/minion/journal.h"

namespace halite::swarm {

struct LedgerStats {
  std::uint64_t records = 0;
  std::uint64_t lost = 0;  // dropped because the queue was full
  std::uint64_t batches = 0;
  std::uint64_t bytes = 0;
  std::chrono::microseconds sync_time{0};  // write + fdatasync, summed over batches
  std::chrono::microseconds max_sync{0};
  std::uint64_t write_errors = 0;
};

class Ledger final : public minion::JobJournal {
 public:
  // Records queued and not yet written; past this new records are counted as lost.
  static constexpr std::size_t kMaxQueuedBytes = 64u << 20;

  // Opens `path` for appending (created 0644) and starts the writer. Error::Unavailable when
  // the file cannot be opened.
  static Result<std::unique_ptr<Ledger>> Open(const std::filesystem::path& path);
  ~Ledger() override;  // Close()
  // Writes what is queued and stops the writer. Idempotent.
  void Close();
  LedgerStats Stats() const;

  // JobJournal:
  void JobStarted(std::string_view minion, std::string_view jid, std::string_view fun) override;
  void ReturnAcknowledged(std::string_view minion, std::string_view jid) override;
  void PublisherConnection(std::string_view minion, bool up) override;

 private:
  explicit Ledger(int fd);
  void Append(std::string_view kind, std::string_view a, std::string_view b = {},
              std::string_view c = {});
  void RunWriter();

  const int fd_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::string queued_ HALITE_GUARDED_BY(mu_);
  std::uint64_t lost_pending_ HALITE_GUARDED_BY(mu_) = 0;
  bool closing_ HALITE_GUARDED_BY(mu_) = false;
  LedgerStats stats_ HALITE_GUARDED_BY(mu_);
  std::thread writer_;
};

}  // namespace halite::swarm
