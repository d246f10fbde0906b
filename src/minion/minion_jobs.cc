// Minion: the publish subscription, job dispatch and returns (the lifecycle, sign-in and
// request channel are minion.cc).
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>

#include "halite/minion/minion.h"
#include "minion_internal.h"

namespace halite::minion {

using wire::Value;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using internal::DestroyLater;
using internal::Endpoint;
using internal::JidHash;
using internal::JidText;
using internal::Rng;

namespace {

// How many publishes are kept while a re-auth caused by a failed decrypt is in flight.
constexpr std::size_t kMaxFramesAwaitingAuth = 32;
// Extra time a kWorker job gets past job_timeout to report its own timeout (cmd.run kills its
// process group at the deadline and says so) before the runtime reports one.
constexpr auto kWorkerTimeoutGrace = 2s;

}  // namespace

// ---------------------------------------------------------------- publishes

void Minion::ConnectPublisher() {
  ClosePublisher();
  std::string endpoint = Endpoint(options_.master_ip, publish_port_);
  try {
    auto sub = std::make_unique<zmq::socket_t>(*env_.context, zmq::socket_type::sub);
    sub->set(zmq::sockopt::linger, 0);
    std::int64_t ivl = options_.recon_default.count();
    if (options_.recon_randomize && options_.recon_max.count() > 0) {
      std::uniform_int_distribution<std::int64_t> pick(ivl, ivl + options_.recon_max.count());
      ivl = pick(Rng());
    }
    sub->set(zmq::sockopt::reconnect_ivl, static_cast<int>(ivl));
    sub->set(zmq::sockopt::reconnect_ivl_max, static_cast<int>(options_.recon_max.count()));
    sub->set(zmq::sockopt::tcp_keepalive, 1);
    sub->set(zmq::sockopt::tcp_keepalive_idle, 300);
    if (options_.master_ip.find(':') != std::string::npos) sub->set(zmq::sockopt::ipv6, 1);
    sub->set(zmq::sockopt::subscribe, "");
    sub_ = std::move(sub);
    if (env_.journal != nullptr) WatchPublisherConnection();
    sub_->connect(endpoint);
  } catch (const zmq::error_t& e) {
    spdlog::error("minion {}: cannot subscribe to {}: {}", options_.id, endpoint, e.what());
    ClosePublisher();
    Count(&MinionMetrics::publish_errors);
    retry_timer_ = loop_.RunAfter(options_.acceptance_wait_time, [weak = weak_from_this()] {
      std::shared_ptr<Minion> self = weak.lock();
      if (!self || self->stopped_) return;
      self->retry_timer_ = 0;
      if (!self->sub_) self->ConnectPublisher();
    });
    return;
  }
  sub_watch_ = loop_.Watch(*sub_, [this] { OnPublishReadable(); });
}

void Minion::ClosePublisher() {
  if (!sub_) return;
  if (sub_watch_ != 0) loop_.Unwatch(sub_watch_);
  sub_watch_ = 0;
  if (sub_monitor_) {
    loop_.Unwatch(sub_monitor_watch_);
    sub_monitor_watch_ = 0;
    zmq_socket_monitor(sub_->handle(), nullptr, 0);
    DestroyLater(loop_, sub_monitor_);
  }
  if (sub_up_) {
    sub_up_ = false;
    env_.journal->PublisherConnection(options_.id, false);
  }
  DestroyLater(loop_, sub_);
}

// The monitor must be connected before sub_ connects, or its first events are dropped.
void Minion::WatchPublisherConnection() {
  static std::atomic<std::uint64_t> next{0};
  const std::string endpoint = "inproc://halite-sub-monitor-" + std::to_string(next++);
  if (zmq_socket_monitor(sub_->handle(), endpoint.c_str(),
                         ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) != 0) {
    spdlog::warn("minion {}: no publish monitor: {}", options_.id, zmq_strerror(zmq_errno()));
    return;
  }
  auto monitor = std::make_unique<zmq::socket_t>(*env_.context, zmq::socket_type::pair);
  monitor->set(zmq::sockopt::linger, 0);
  monitor->connect(endpoint);
  sub_monitor_ = std::move(monitor);
  sub_monitor_watch_ = loop_.Watch(*sub_monitor_, [this] { OnPublisherMonitorReadable(); });
}

void Minion::OnPublisherMonitorReadable() {
  zmq::message_t event;
  zmq::message_t address;
  try {
    if (!sub_monitor_->recv(event, zmq::recv_flags::dontwait)) return;
    if (event.more()) (void)sub_monitor_->recv(address, zmq::recv_flags::dontwait);
  } catch (const zmq::error_t& e) {
    spdlog::warn("minion {}: publish monitor: {}", options_.id, e.what());
    return;
  }
  if (event.size() < sizeof(std::uint16_t)) return;
  std::uint16_t id = 0;
  std::memcpy(&id, event.data(), sizeof id);
  bool up = id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED;
  if (up == sub_up_) return;
  sub_up_ = up;
  env_.journal->PublisherConnection(options_.id, up);
}

void Minion::OnPublishReadable() {
  std::string payload;
  bool got = false;
  try {
    for (;;) {
      zmq::message_t frame;
      if (!sub_->recv(frame, zmq::recv_flags::dontwait)) break;
      got = true;
      payload = frame.to_string();  // with zmq_filtering the payload is the last frame
      if (!frame.more()) break;
    }
  } catch (const zmq::error_t& e) {
    spdlog::warn("minion {}: publish recv failed: {}", options_.id, e.what());
    return;
  }
  if (got) HandlePublish(std::move(payload), /*after_reauth=*/false);
}

void Minion::HandlePublish(std::string frame, bool after_reauth) {
  if (!after_reauth) Count(&MinionMetrics::publishes);
  if (!aes_) return;
  auto load = OpenPublish(frame, *aes_, serial_guard_, master_key_ ? &*master_key_ : nullptr,
                          options_.sign_pub_messages);
  if (!load.ok()) {
    if (load.error().code == ErrorCode::kUnauthenticated && !after_reauth) {
      // Most likely the master restarted or rotated its key: sign in again, then retry.
      if (frames_awaiting_auth_.size() >= kMaxFramesAwaitingAuth) return;
      frames_awaiting_auth_.push_back(std::move(frame));
      if (frames_awaiting_auth_.size() > 1) return;  // a re-auth is already on its way
      spdlog::info("minion {}: publish does not decrypt ({}); signing in again", options_.id,
                   load.error().message);
      Count(&MinionMetrics::reauths);
      auto reauth = [weak = weak_from_this()] {
        std::shared_ptr<Minion> self = weak.lock();
        if (!self || self->stopped_) return;
        self->Authenticate([weak](bool ok) {
          std::shared_ptr<Minion> self = weak.lock();
          if (!self || self->stopped_) return;
          std::vector<std::string> frames;
          frames.swap(self->frames_awaiting_auth_);
          if (!ok) return;
          for (std::string& f : frames) {
            if (self->stopped_) return;
            self->HandlePublish(std::move(f), /*after_reauth=*/true);
          }
        });
      };
      if (options_.random_reauth_delay.count() > 0) {
        std::uniform_int_distribution<std::int64_t> pick(0, options_.random_reauth_delay.count());
        loop_.RunAfter(std::chrono::milliseconds(pick(Rng())), std::move(reauth));
      } else {
        reauth();
      }
      return;
    }
    spdlog::debug("minion {}: dropping a publish: {}", options_.id, load.error().ToString());
    Count(&MinionMetrics::publish_errors);
    return;
  }
  if (load->is_map() && load->map()->empty()) return;  // replayed serial, or no payload
  if (!IsJobLoad(*load)) {
    spdlog::debug("minion {}: publish without tgt/jid/fun/arg dropped", options_.id);
    return;
  }
  HandleJob(std::move(load).value());
}

bool Minion::SeenJid(std::string_view jid) {
  std::uint64_t h = JidHash(jid);
  for (std::uint64_t s : seen_jids_) {
    if (s == h) return true;
  }
  seen_jids_[seen_next_] = h;
  seen_next_ = static_cast<std::uint8_t>((seen_next_ + 1) % seen_jids_.size());
  return false;
}

void Minion::HandleJob(Value load) {
  std::optional<Value> grains;
  if (TargetNeedsGrains(load)) grains = Grains();
  auto targeted = IsTargeted(load, options_.id, grains ? &*grains : nullptr, &pillar_);
  if (!targeted.ok()) {
    spdlog::debug("minion {}: invalid target: {}", options_.id, targeted.error().ToString());
    return;
  }
  if (!*targeted) return;
  std::string jid = JidText(load.Find("jid"));
  if (SeenJid(jid)) {
    spdlog::debug("minion {}: job {} already seen; dropped", options_.id, jid);
    return;
  }
  Count(&MinionMetrics::jobs_seen);
  if (env_.journal != nullptr) {
    const Value* fun = load.Find("fun");
    env_.journal->JobStarted(options_.id, jid, fun && fun->str() ? *fun->str() : JidText(fun));
  }
  StartJob(std::move(load), std::move(jid));
}

// ---------------------------------------------------------------- jobs

Minion::RunningJob* Minion::FindJob(std::string_view jid) {
  for (RunningJob& job : jobs_) {
    if (job.jid == jid) return &job;
  }
  return nullptr;
}

Value Minion::FindJobInfo(std::string_view jid) const {
  for (const RunningJob& job : jobs_) {
    if (job.jid != jid) continue;
    Value info = job.load;
    info.Set("pid", static_cast<std::int64_t>(getpid()));
    return info;
  }
  return Value::EmptyMap();
}

void Minion::StartJob(Value load, std::string jid) {
  const std::string* fun = load.FindStr("fun");
  std::string fun_name = fun != nullptr ? *fun : JidText(load.Find("fun"));
  JobCall call = ParseJobCall(jid, fun_name, *load.Find("arg"));
  jobs_.push_back(RunningJob{jid, std::move(load), std::make_shared<std::atomic<bool>>(false), 0});
  RunningJob& job = jobs_.back();

  const FunctionTable::Entry* entry = fun != nullptr ? env_.functions->Find(*fun) : nullptr;
  if (entry == nullptr) {
    FinishJob(jid, NotAvailable(fun_name));
    return;
  }
  Clock::time_point deadline = Clock::time_point::max();
  if (options_.job_timeout.count() > 0) {
    deadline = Clock::now() + options_.job_timeout;
    auto fire_after = options_.job_timeout;
    if (entry->run_on == RunOn::kWorker) {
      fire_after += std::chrono::duration_cast<std::chrono::milliseconds>(kWorkerTimeoutGrace);
    }
    job.timeout_timer = loop_.RunAfter(fire_after, [weak = weak_from_this(), jid] {
      std::shared_ptr<Minion> self = weak.lock();
      if (!self || self->stopped_) return;
      RunningJob* j = self->FindJob(jid);
      if (j == nullptr) return;
      j->timeout_timer = 0;
      j->cancelled->store(true);
      spdlog::warn("minion {}: job {} exceeded its timeout", self->options_.id, jid);
      std::string fun_text = JidText(j->load.Find("fun"));
      self->FinishJob(jid, TimedOut(fun_text, self->options_.job_timeout));
    });
  }

  if (entry->run_on == RunOn::kLoop) {
    Value grains = Grains();
    JobContext ctx;
    ctx.minion_id = options_.id;
    ctx.grains = &grains;
    ctx.functions = env_.functions.get();
    ctx.deadline = deadline;
    ctx.cancelled = job.cancelled.get();
    ctx.find_job = [this](std::string_view j) { return FindJobInfo(j); };
    ctx.running = [this, &jid] {
      wire::Array running;
      for (const RunningJob& other : jobs_) {
        if (other.jid != jid) running.push_back(FindJobInfo(other.jid));
      }
      return Value(std::move(running));
    };
    CompleteJob(jid, entry->fn(call, ctx));
    return;
  }
  transport::ZmqLoop& loop = loop_;
  env_.exec_pool->Post([&loop, weak = weak_from_this(), functions = env_.functions, fn = entry->fn,
                        call = std::move(call), grains = std::make_shared<const Value>(Grains()),
                        id = options_.id, deadline, cancelled = job.cancelled, jid] {
    if (cancelled->load()) return;
    JobContext ctx;
    ctx.minion_id = id;
    ctx.grains = grains.get();
    ctx.functions = functions.get();
    ctx.deadline = deadline;
    ctx.cancelled = cancelled.get();
    FunctionResult result = fn(call, ctx);
    PostToMinion(loop, weak,
                 [jid, result = std::move(result)](Minion& m) { m.CompleteJob(jid, result); });
  });
}

void Minion::CompleteJob(const std::string& jid, FunctionResult result) {
  if (FindJob(jid) == nullptr) return;  // already reported (timeout)
  auto delay = result.delay + options_.function_latency;
  if (delay.count() <= 0) {
    FinishJob(jid, std::move(result.result));
    return;
  }
  loop_.RunAfter(delay, [weak = weak_from_this(), jid, r = std::move(result.result)] {
    std::shared_ptr<Minion> self = weak.lock();
    if (self && !self->stopped_) self->FinishJob(jid, r);
  });
}

void Minion::FinishJob(const std::string& jid, const JobResult& result) {
  RunningJob* job = FindJob(jid);
  if (job == nullptr) return;
  if (job->timeout_timer != 0) loop_.CancelTimer(job->timeout_timer);
  Value load = std::move(job->load);
  jobs_.erase(jobs_.begin() + (job - jobs_.data()));
  SendAes(BuildReturnLoad(options_.id, load, result), ReqKind::kReturn,
          [weak = weak_from_this(), jid](Result<Value> r) {
            std::shared_ptr<Minion> self = weak.lock();
            if (!self) return;
            if (r.ok()) {
              self->Count(&MinionMetrics::returns_sent);
              if (self->env_.journal != nullptr) {
                self->env_.journal->ReturnAcknowledged(self->options_.id, jid);
              }
              return;
            }
            spdlog::warn("minion {}: the return of job {} was not delivered: {}", self->options_.id,
                         jid, r.error().ToString());
            self->Count(&MinionMetrics::return_errors);
          });
}

}  // namespace halite::minion
