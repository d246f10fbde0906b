#include "halite/swarm/ledger.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace halite::swarm {

namespace {

using Clock = std::chrono::steady_clock;

std::string NowMicros() {
  return std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
}

// Every byte of `data`, retrying short writes and EINTR.
bool WriteAll(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<Ledger>> Ledger::Open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Error::Unavailable("cannot open ledger " + path.string() + ": " + std::strerror(errno));
  }
  std::unique_ptr<Ledger> ledger(new Ledger(fd));
  {
    std::lock_guard lock(ledger->mu_);
    ledger->queued_ = "# halite-swarm ledger " + std::to_string(getpid()) + "\n";
  }
  ledger->writer_ = std::thread([l = ledger.get()] { l->RunWriter(); });
  return ledger;
}

Ledger::Ledger(int fd) : fd_(fd) {}

Ledger::~Ledger() {
  Close();
  ::close(fd_);
}

void Ledger::Close() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  wake_.notify_one();
  if (writer_.joinable()) writer_.join();
}

LedgerStats Ledger::Stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Ledger::JobStarted(std::string_view minion, std::string_view jid, std::string_view fun) {
  Append("run", minion, jid, fun);
}

void Ledger::ReturnAcknowledged(std::string_view minion, std::string_view jid) {
  Append("ack", minion, jid);
}

void Ledger::PublisherConnection(std::string_view minion, bool up) {
  Append(up ? "up" : "down", minion);
}

void Ledger::Append(std::string_view kind, std::string_view a, std::string_view b,
                    std::string_view c) {
  std::string line = NowMicros();
  for (std::string_view field : {kind, a, b, c}) {
    if (field.empty()) break;
    line += '\t';
    // A tab or newline inside a field would split the record: ids and jids never have one,
    // a function name from a publish might.
    for (char ch : field) line += (ch == '\t' || ch == '\n') ? ' ' : ch;
  }
  line += '\n';
  {
    std::lock_guard lock(mu_);
    if (queued_.size() + line.size() > kMaxQueuedBytes) {
      ++lost_pending_;
      return;
    }
    queued_ += line;
  }
  wake_.notify_one();
}

void Ledger::RunWriter() {
  pthread_setname_np(pthread_self(), "swarm-ledger");
  std::string batch;
  for (;;) {
    std::uint64_t lost = 0;
    bool closing = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return closing_ || !queued_.empty() || lost_pending_ > 0; });
      batch.swap(queued_);
      lost = lost_pending_;
      lost_pending_ = 0;
      closing = closing_;
    }
    if (lost > 0) batch += NowMicros() + "\tlost\t" + std::to_string(lost) + "\n";
    if (!batch.empty()) {
      auto t0 = Clock::now();
      bool ok = WriteAll(fd_, batch) && ::fdatasync(fd_) == 0;
      auto took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
      if (!ok) spdlog::error("ledger: write failed: {}", std::strerror(errno));
      std::uint64_t records = 0;
      for (char ch : batch) records += ch == '\n';
      std::lock_guard lock(mu_);
      stats_.records += records;
      stats_.lost += lost;
      stats_.batches++;
      stats_.bytes += batch.size();
      stats_.sync_time += took;
      stats_.max_sync = std::max(stats_.max_sync, took);
      if (!ok) stats_.write_errors++;
      batch.clear();
    }
    if (closing) {
      std::lock_guard lock(mu_);
      if (queued_.empty() && lost_pending_ == 0) return;
    }
  }
}

}  // namespace halite::swarm
