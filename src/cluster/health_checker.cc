#include "halite/cluster/health_checker.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "halite/common/descriptors.h"
#include "halite/common/service_manager.h"
#include "halite/keys/fs.h"

namespace halite::cluster {

namespace {

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Writes, syncs, reads back and removes a probe file: the directory really works. A full
// volume (ENOSPC, EDQUOT) comes back as ResourceExhausted.
std::optional<Error> ProbeDirectory(const std::filesystem::path& dir, const std::string& self_id) {
  const auto probe = dir / (".health-" + self_id);
  const std::string content = std::to_string(NowMs());
  if (auto st = keys::WriteFileAtomic(probe, content, 0600); !st.ok()) {
    (void)keys::RemoveFile(probe);
    return Error{st.error().code, "cannot write " + dir.string() + ": " + st.error().message};
  }
  auto back = keys::ReadFile(probe);
  if (!back.ok() || *back != content) {
    return Error::Unavailable("cannot read back a probe in " + dir.string());
  }
  (void)keys::RemoveFile(probe);
  return std::nullopt;
}

bool IsFull(const Error& e) { return e.code == ErrorCode::kResourceExhausted; }

wire::Value List(const std::vector<std::string>& items) {
  wire::Array out;
  for (const auto& item : items) out.emplace_back(item);
  return wire::Value(std::move(out));
}

}  // namespace

HealthChecker::HealthChecker(HealthCheckerOptions options) : options_(std::move(options)) {
  // A loop counts as answering from the start; the first round's heartbeat follows at once.
  for (std::size_t i = 0; i < options_.loops.size(); ++i) {
    beats_.push_back(std::make_unique<std::atomic<std::int64_t>>(NowMs()));
  }
}

HealthChecker::~HealthChecker() { Stop(); }

void HealthChecker::Start() {
  thread_ = std::thread([this] { Run(); });
}

void HealthChecker::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HealthChecker::Run() {
  pthread_setname_np(pthread_self(), "health-check");
  const auto watchdog = service::WatchdogInterval();
  // At least two rounds per watchdog interval (systemd's advice), one per period otherwise.
  auto period = options_.period;
  if (watchdog) {
    period = std::min(period, std::chrono::duration_cast<std::chrono::milliseconds>(*watchdog / 3));
    period = std::max(period, std::chrono::milliseconds(10));
  }
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    Round();
    if (watchdog && LoopProblems().empty()) service::NotifyWatchdog();
    lock.lock();
    cv_.wait_for(lock, period, [this] { return stop_; });
  }
}

void HealthChecker::Round() {
  std::vector<std::string> problems;
  // A full volume is not a lost one: reads work, and in a cluster every master shares it
  // (the shared folder), so moving minions would help nothing. It is reported as degraded,
  // and what cannot be written fails on its own (an unstored return goes unanswered, so the
  // minion sends it again; a publish is refused with the error).
  std::vector<std::string> full;
  bool out_of_descriptors = false;
  for (const auto& dir : options_.dirs) {
    if (auto p = ProbeDirectory(dir, options_.self_id)) {
      if (IsFull(*p)) {
        full.push_back(p->message);
      } else if (OutOfFileDescriptors()) {
        // This process had no descriptor left, the directory is fine: not lost storage
        // (dropping minion requests would make them retry on yet more connections).
        out_of_descriptors = true;
      } else {
        problems.push_back(p->message);
      }
    }
  }
  if (out_of_descriptors != descriptors_exhausted_.exchange(out_of_descriptors)) {
    if (out_of_descriptors) {
      spdlog::error(
          "out of file descriptors (RLIMIT_NOFILE {}): new connections wait and file work "
          "fails until some close; a sign-in storm needs 3 per minion (request, publish and "
          "sign-in connections): raise LimitNOFILE",
          FileDescriptorLimit());
    } else {
      spdlog::warn("file descriptors available again");
    }
  }
  const bool lost = !problems.empty();
  if (lost != storage_lost_.exchange(lost)) {
    if (lost) {
      spdlog::error(
          "storage lost ({}): minion requests go unanswered until it is back, so minions "
          "retry on a master that can store",
          problems.front());
    } else {
      spdlog::warn("storage is back: answering minions again");
    }
  }
  std::optional<std::string> job_cache_problem;
  bool job_cache_full = false;
  if (auto st = options_.check_job_cache(); !st.ok()) {
    job_cache_problem = "job cache: " + st.error().message;
    job_cache_full = IsFull(st.error());
  }
  const bool is_full = !full.empty() || job_cache_full;
  if (is_full != storage_full_.exchange(is_full)) {
    if (is_full) {
      spdlog::error(
          "disk full ({}): returns that cannot be stored go unanswered (minions send them "
          "again) and publishes are refused until there is room",
          full.empty() ? *job_cache_problem : full.front());
    } else {
      spdlog::warn("disk has room again");
    }
  }
  const bool cluster = options_.peers != nullptr;
  std::optional<QuorumDecision> quorum_now;
  if (cluster) {
    quorum_now = CheckQuorum(!job_cache_problem);
    if (!quorum_now->serving) problems.push_back(QuorumProblem(*quorum_now));
  }
  std::vector<std::string> degraded;
  if (out_of_descriptors) {
    degraded.push_back("out of file descriptors (RLIMIT_NOFILE " +
                       std::to_string(FileDescriptorLimit()) + ")");
  }
  // etcd away is no reason to move minions: every master lost it alike (or this one is cut
  // from it, and serves its minions on the member list it last read).
  if (options_.membership && !(options_.left && options_.left())) {
    if (std::string p = options_.membership->problem(); !p.empty()) {
      degraded.push_back("coordination unavailable: " + p);
    }
  }
  // A lone master has nowhere to send its minions: a full disk is a problem there.
  for (auto& f : full) (cluster ? degraded : problems).push_back("disk full: " + std::move(f));
  if (job_cache_problem && job_cache_full && cluster) {
    degraded.push_back(*job_cache_problem);
  } else if (job_cache_problem) {
    (JobCacheProblemOnlyDegrades(*job_cache_problem, quorum_now) ? degraded : problems)
        .push_back(*job_cache_problem);
  } else {
    job_cache_down_since_ = {};
    job_cache_shared_ = false;
  }
  for (std::size_t i = 0; i < options_.loops.size(); ++i) {
    std::atomic<std::int64_t>* beat = beats_[i].get();
    options_.loops[i].post([beat] { *beat = NowMs(); });
  }
  std::lock_guard lock(mu_);
  problems_ = std::move(problems);
  degraded_ = std::move(degraded);
  checked_at_ = std::chrono::steady_clock::now();
}

QuorumDecision HealthChecker::CheckQuorum(bool job_cache_ok) {
  if (!quorum_) quorum_.emplace(options_.self_id, QuorumTracker::Options{});
  std::vector<std::string> ids, reachable;
  for (const auto& link : options_.peers->Status()) {
    ids.push_back(link.id);
    if (link.connected) reachable.push_back(link.id);
  }
  // A write that fails is the shared folder's problem, which ProbeDirectory reports (or
  // etcd's, which the membership reports as "coordination unavailable").
  (void)options_.quorum_views->Write({options_.self_id, ++quorum_seq_, reachable, job_cache_ok});
  auto views = options_.quorum_views->Read(ids);
  auto decision = quorum_->Observe(views.ok() ? *views : std::vector<QuorumView>{}, reachable,
                                   std::chrono::steady_clock::now(), job_cache_ok);
  std::lock_guard lock(mu_);
  if (decision.serving != quorum_decision_.serving) {
    if (!decision.serving) {
      spdlog::error("{}", QuorumProblem(decision));
    } else if (!quorum_decision_.side.empty()) {
      spdlog::warn("partition healed: this master serves again (its side: {} masters)",
                   decision.side.size());
    }
  }
  quorum_decision_ = decision;
  return decision;
}

bool HealthChecker::JobCacheProblemOnlyDegrades(const std::string& problem,
                                                const std::optional<QuorumDecision>& quorum_now) {
  // A single master reports its job cache problem at once: there is nowhere else to go.
  if (!quorum_now) return false;
  // In a cluster, a job cache every alive master finds down (one PostgreSQL they all use) is
  // no reason to move minions: no master is better off, and draining them all would cut every
  // minion's connection. Returns are held until it is back; /health stays 200 and says so. A
  // problem this master has alone is reported once it has lasted job_cache_grace (the peers'
  // views lag a round behind).
  const auto now = std::chrono::steady_clock::now();
  if (job_cache_down_since_ == std::chrono::steady_clock::time_point{}) {
    job_cache_down_since_ = now;
  }
  const bool shared = quorum_now->job_cache_down.size() == quorum_now->alive.size();
  if (shared && !job_cache_shared_) {
    spdlog::error(
        "{}: every master's job cache is down; staying in service (returns are held until it "
        "is back)",
        problem);
  }
  job_cache_shared_ = shared;
  return shared || now - job_cache_down_since_ < options_.job_cache_grace;
}

std::vector<std::string> HealthChecker::LoopProblems() const {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < options_.loops.size(); ++i) {
    if (NowMs() - beats_[i]->load() > options_.stale.count()) {
      problems.push_back(options_.loops[i].name + " is not running");
    }
  }
  return problems;
}

std::optional<QuorumDecision> HealthChecker::quorum() const {
  std::lock_guard lock(mu_);
  if (quorum_decision_.side.empty()) return std::nullopt;
  return quorum_decision_;
}

wire::Value HealthChecker::QuorumToValue(const QuorumDecision& d) {
  return wire::Value::MapOf({{"serving", d.serving},
                             {"side", List(d.side)},
                             {"serving_side", List(d.winner)},
                             {"alive", List(d.alive)},
                             {"job_cache_down", List(d.job_cache_down)}});
}

HealthReport HealthChecker::Report() {
  auto now = std::chrono::steady_clock::now();
  std::vector<std::string> problems;
  std::vector<std::string> degraded;
  QuorumDecision quorum_now;
  {
    std::lock_guard lock(mu_);
    problems = problems_;
    degraded = degraded_;
    quorum_now = quorum_decision_;
    if (checked_at_.time_since_epoch().count() == 0) {
      problems.push_back("no health check has completed yet");
    } else if (now - checked_at_ > options_.stale) {
      problems.push_back("health checks are stuck (shared directory or job cache not answering)");
    }
  }
  for (auto& p : LoopProblems()) problems.push_back(std::move(p));
  if (options_.lifecycle_problems) {
    for (auto& p : options_.lifecycle_problems()) problems.push_back(std::move(p));
  }
  wire::Value body = wire::Value::MapOf(
      {{"id", options_.self_id},
       {"healthy", problems.empty()},
       {"problems", List(problems)},
       {"connected_minions", options_.connected_minions ? options_.connected_minions() : 0}});
  if (!degraded.empty()) body.Set("degraded", List(degraded));
  if (options_.peers) {
    wire::Array links;
    for (const auto& link : options_.peers->Status()) {
      links.push_back(wire::Value::MapOf({{"id", link.id},
                                          {"connected", link.connected},
                                          {"backlog", link.backlog},
                                          {"problem", link.problem}}));
    }
    body.Set("peers", wire::Value(std::move(links)));
    if (!quorum_now.side.empty()) body.Set("quorum", QuorumToValue(quorum_now));
  }
  return {problems.empty(), body.ToJson()};
}

}  // namespace halite::cluster
