#include "halite/cluster/peer_channel.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "halite/cluster/peer_frame.h"

namespace halite::cluster {

namespace {

using Clock = std::chrono::steady_clock;
using transport::ZmqLoop;

constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
constexpr char kZapDomain[] = "halite-cluster";
// Acks go out after this many deliveries even before ack_interval.
constexpr std::uint64_t kAckEvery = 128;
// Messages read per call of a readable handler (the loop calls again while input remains).
constexpr int kReadBatch = 64;
constexpr int kSendHwm = 1000;
constexpr int kRecvHwm = 1000;
constexpr std::chrono::milliseconds kSendRetryDelay{1};
constexpr std::size_t kRetiredEpochs = 16;
// Bytes a data frame adds to kind + payload (map, keys, three uint64), rounded up.
constexpr std::size_t kFrameOverhead = 128;
constexpr int kHandshakeFailures = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                   ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                   ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

std::uint64_t NewEpoch() {
  std::random_device random;
  std::uint64_t epoch = 0;
  while (epoch == 0) {
    epoch = (static_cast<std::uint64_t>(random()) << 32) ^ static_cast<std::uint64_t>(random());
  }
  return epoch;
}

// At most one line per `period`; the next allowed line reports how many were held back.
class LogLimiter {
 public:
  explicit LogLimiter(std::chrono::seconds period) : period_(period) {}
  // Returns true when the caller may log; `*suppressed` is how many were skipped before.
  bool Allow(std::uint64_t* suppressed) {
    auto now = Clock::now();
    if (logged_once_ && now - last_ < period_) {
      ++suppressed_;
      return false;
    }
    logged_once_ = true;
    last_ = now;
    *suppressed = suppressed_;
    suppressed_ = 0;
    return true;
  }

 private:
  const std::chrono::seconds period_;
  bool logged_once_ = false;
  Clock::time_point last_;
  std::uint64_t suppressed_ = 0;
};

std::string HandshakeFailureReason(std::uint16_t event, std::uint32_t value) {
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
    return "CURVE key not a configured peer (ZAP " + std::to_string(value) + ")";
  }
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
    if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) return "not a CURVE client";
    if (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC) return "CURVE handshake did not verify";
    return "protocol error during the handshake";
  }
  return "handshake failed";
}

// Receives the remaining frames of a multipart message and drops them.
void DiscardRest(zmq::socket_t& socket, bool more) {
  while (more) {
    zmq::message_t rest;
    if (!socket.recv(rest, zmq::recv_flags::dontwait)) return;
    more = rest.more();
  }
}

}  // namespace

class PeerChannel::Impl : public std::enable_shared_from_this<PeerChannel::Impl> {
 public:
  Impl(zmq::context_t& context, ZmqLoop& loop, PeerChannelOptions options)
      : context_(context),
        loop_(loop),
        options_(std::move(options)),
        epoch_(NewEpoch()),
        monitor_endpoint_("inproc://halite-cluster-monitor-" + std::to_string(epoch_)) {
    links_.resize(options_.peers.size());
    inbound_.resize(options_.peers.size());
    for (std::size_t i = 0; i < options_.peers.size(); ++i) {
      links_[i].id = options_.peers[i].id;
      links_[i].endpoint = options_.peers[i].endpoint;
      index_by_id_.emplace(links_[i].id, i);
      PeerLinkStatus status;
      status.id = links_[i].id;
      status.endpoint = links_[i].endpoint;
      status.problem = "peer channel not started";
      stats_.push_back(std::move(status));
    }
  }

  ~Impl() {
    // Sockets are closed on the loop (CloseOnLoop) before the last reference goes.
    HALITE_CHECK(router_ == nullptr && zap_ == nullptr) << "peer channel sockets left open";
  }

  void SetHandler(Handler handler) {
    HALITE_CHECK(!started_) << "PeerChannel::SetHandler after Start";
    handler_ = std::move(handler);
  }

  halite::Status Start();
  void Shutdown();
  void Broadcast(PeerMessage message);
  std::vector<PeerLinkStatus> Snapshot() const {
    std::lock_guard lock(stats_mu_);
    return stats_;
  }
  std::uint64_t rejections() const { return rejections_.load(); }
  std::uint64_t epoch() const { return epoch_; }

 private:
  struct Pending {
    std::uint64_t seq;
    std::shared_ptr<const PeerMessage> message;
  };

  // Our sending side towards one peer: the DEALER and the backlog. Loop thread only.
  struct Link {
    std::string id;
    std::string endpoint;
    std::string server_key;   // z85; empty while unknown
    std::string key_problem;  // why there is no usable key or socket
    std::unique_ptr<zmq::socket_t> dealer;
    ZmqLoop::WatchId watch = 0;
    std::deque<Pending> backlog;  // unacknowledged, oldest first, consecutive seqs
    std::uint64_t next_seq = 1;   // seq of the next Broadcast
    std::uint64_t send_next = 1;  // seq of the next frame to hand to ZeroMQ
    bool connected = false;
    std::optional<Clock::time_point> last_reply;  // on the DEALER
    Clock::time_point dealer_since;               // when the DEALER was (re)made
    bool retry_pending = false;
    std::uint64_t burst_drops = 0;
    bool dropped_since_tick = false;
    std::uint64_t low() const { return backlog.empty() ? next_seq : backlog.front().seq; }
  };

  // Our receiving side for one peer (messages come in on the ROUTER). Loop thread only.
  struct Inbound {
    std::uint64_t epoch = 0;            // the sender epoch being followed; 0 = none yet
    std::uint64_t expected = 0;         // next seq to deliver
    std::deque<std::uint64_t> retired;  // earlier epochs of this peer: ignored
    std::string routing_id;             // the connection acks go back to
    std::uint64_t unacked = 0;          // deliveries (or duplicates) since the last ack
    std::uint64_t nacked = 0;           // `expected` of the last resend request
    Clock::time_point nack_time;
  };

  struct KeyReading {
    std::string key;      // z85, empty when unreadable
    std::string problem;  // why
    bool operator==(const KeyReading&) const = default;
  };

  // Caller / key thread.
  halite::Status ValidateOptions() const;
  std::vector<KeyReading> ReadPeerKeys() const;
  void KeyThread(std::vector<KeyReading> last);

  // Loop thread.
  halite::Status StartOnLoop(const std::vector<KeyReading>& keys);
  void CloseOnLoop();
  void CloseSockets();
  void ApplyKey(std::size_t i, const KeyReading& reading);
  void RebuildZapKeys();
  void CreateDealer(std::size_t i);
  void DrainInbox();
  void Enqueue(std::size_t i, const std::shared_ptr<const PeerMessage>& message);
  void Pump(std::size_t i);
  void ScheduleRetry(std::size_t i);
  void OnHeartbeatTick();
  void OnAckTick();
  void OnDealerReadable(std::size_t i);
  void OnAck(std::size_t i, const AckFrame& ack);
  void OnRouterReadable();
  bool FollowEpoch(std::size_t i, std::uint64_t epoch, std::uint64_t low);
  void OnData(std::size_t i, DataFrame data);
  void OnHeartbeat(std::size_t i, const HeartbeatFrame& hb);
  void RequestResend(std::size_t i);
  void SendAck(std::size_t i, bool resend);
  void OnZapReadable();
  void OnMonitorReadable();
  void PublishLink(std::size_t i);
  void Touch(std::size_t i);

  zmq::context_t& context_;
  ZmqLoop& loop_;
  const PeerChannelOptions options_;
  const std::uint64_t epoch_;
  const std::string monitor_endpoint_;
  Handler handler_;       // set before Start, then read on the loop only
  bool started_ = false;  // caller thread
  std::atomic<bool> closed_{false};
  std::atomic<std::uint64_t> rejections_{0};

  // Broadcast() hands messages over here; one posted task drains a batch.
  std::mutex inbox_mu_;
  std::vector<PeerMessage> inbox_ HALITE_GUARDED_BY(inbox_mu_);

  mutable std::mutex stats_mu_;
  std::vector<PeerLinkStatus> stats_ HALITE_GUARDED_BY(stats_mu_);

  std::thread key_thread_;
  std::mutex key_mu_;
  std::condition_variable key_cv_;
  bool key_stop_ HALITE_GUARDED_BY(key_mu_) = false;

  // Loop-thread state.
  std::vector<Link> links_;
  std::vector<Inbound> inbound_;
  std::unordered_map<std::string, std::size_t> index_by_id_;  // immutable after construction
  std::unordered_map<std::string, std::size_t> zap_keys_;     // raw public key -> link index
  std::unique_ptr<zmq::socket_t> router_;
  std::unique_ptr<zmq::socket_t> zap_;
  std::unique_ptr<zmq::socket_t> monitor_;
  ZmqLoop::WatchId router_watch_ = 0;
  ZmqLoop::WatchId zap_watch_ = 0;
  ZmqLoop::WatchId monitor_watch_ = 0;
  ZmqLoop::TimerId heartbeat_timer_ = 0;
  ZmqLoop::TimerId ack_timer_ = 0;
  LogLimiter malformed_log_{std::chrono::seconds(10)};
  LogLimiter rejection_log_{std::chrono::seconds(10)};
  LogLimiter zap_log_{std::chrono::seconds(10)};
};

// ---- caller thread ----------------------------------------------------------------------

halite::Status PeerChannel::Impl::ValidateOptions() const {
  std::vector<std::string> problems;
  if (!IsValidPeerId(options_.self_id)) {
    problems.push_back("self_id '" + options_.self_id + "' cannot name a file in peers/");
  }
  if (options_.bind_endpoint.empty()) problems.push_back("bind_endpoint is empty");
  if (!IsCurveKeyPair(options_.keys)) {
    problems.push_back("keys are not a z85 CURVE key pair (use LoadOrCreateCurveKeys)");
  }
  std::unordered_set<std::string> seen;
  for (const PeerSpec& peer : options_.peers) {
    if (!IsValidPeerId(peer.id)) {
      problems.push_back("peer id '" + peer.id + "' cannot name a file in peers/");
    }
    if (peer.id == options_.self_id) problems.push_back("peer '" + peer.id + "' is this master");
    if (!seen.insert(peer.id).second) problems.push_back("peer '" + peer.id + "' listed twice");
    if (peer.endpoint.empty()) problems.push_back("peer '" + peer.id + "' has no endpoint");
  }
  if (options_.backlog_max == 0) problems.push_back("backlog_max must be at least 1");
  if (options_.heartbeat_interval.count() <= 0) problems.push_back("heartbeat_interval <= 0");
  if (options_.link_timeout <= options_.heartbeat_interval) {
    problems.push_back("link_timeout must be longer than heartbeat_interval");
  }
  if (options_.ack_interval.count() <= 0) problems.push_back("ack_interval <= 0");
  if (options_.key_poll_interval.count() <= 0) problems.push_back("key_poll_interval <= 0");
  if (options_.max_message_bytes < 1024) problems.push_back("max_message_bytes < 1024");
  if (problems.empty()) return OkStatus();
  std::string message = "peer channel options:";
  for (const std::string& p : problems) message += " " + p + ";";
  message.pop_back();
  return Error::InvalidArgument(std::move(message));
}

std::vector<PeerChannel::Impl::KeyReading> PeerChannel::Impl::ReadPeerKeys() const {
  std::vector<KeyReading> readings;
  for (const PeerSpec& peer : options_.peers) {
    KeyReading reading;
    auto key = ReadPeerCurveKey(options_.cluster_pki_dir, peer.id);
    if (key.ok()) {
      reading.key = std::move(*key);
    } else if (key.error().code == ErrorCode::kNotFound) {
      reading.problem = "unknown peer: no CURVE key " +
                        PeerCurveKeyPath(options_.cluster_pki_dir, peer.id).string() +
                        " (has that master started once?)";
    } else {
      reading.problem = "cannot read its CURVE key: " + key.error().ToString();
    }
    readings.push_back(std::move(reading));
  }
  return readings;
}

void PeerChannel::Impl::KeyThread(std::vector<KeyReading> last) {
  pthread_setname_np(pthread_self(), "cluster-keys");
  for (;;) {
    {
      std::unique_lock lock(key_mu_);
      if (key_cv_.wait_for(lock, options_.key_poll_interval, [this] { return key_stop_; })) return;
    }
    std::vector<KeyReading> now = ReadPeerKeys();
    for (std::size_t i = 0; i < now.size(); ++i) {
      if (now[i] == last[i]) continue;
      loop_.Post([self = shared_from_this(), i, reading = now[i]] {
        if (!self->closed_) self->ApplyKey(i, reading);
      });
    }
    last = std::move(now);
  }
}

halite::Status PeerChannel::Impl::Start() {
  HALITE_CHECK(!loop_.IsCurrentThread()) << "PeerChannel::Start on its own loop";
  HALITE_CHECK(!started_) << "PeerChannel::Start twice";
  HALITE_RETURN_IF_ERROR(CheckCurveSupported());
  HALITE_RETURN_IF_ERROR(ValidateOptions());
  std::vector<KeyReading> keys = ReadPeerKeys();
  std::promise<halite::Status> outcome;
  loop_.Post([this, &outcome, &keys] { outcome.set_value(StartOnLoop(keys)); });
  halite::Status status = outcome.get_future().get();
  if (!status.ok()) return status;
  started_ = true;
  key_thread_ =
      std::thread([this, keys = std::move(keys)]() mutable { KeyThread(std::move(keys)); });
  spdlog::info("peer channel {} listening on {} for {} peers", options_.self_id,
               options_.bind_endpoint, links_.size());
  return OkStatus();
}

void PeerChannel::Impl::Shutdown() {
  if (key_thread_.joinable()) {
    {
      std::lock_guard lock(key_mu_);
      key_stop_ = true;
    }
    key_cv_.notify_all();
    key_thread_.join();
  }
  if (!started_ || closed_) return;
  std::promise<void> done;
  loop_.Post([this, &done] {
    CloseOnLoop();
    done.set_value();
  });
  done.get_future().wait();
}

void PeerChannel::Impl::Broadcast(PeerMessage message) {
  if (closed_) return;
  // A peer would refuse the frame and drop the connection, again at every resend.
  if (message.kind.size() + message.payload.size() + kFrameOverhead > options_.max_message_bytes) {
    spdlog::error(
        "peer channel: a '{}' message of {} bytes is over max_message_bytes ({}); not "
        "sent",
        message.kind, message.payload.size(), options_.max_message_bytes);
    return;
  }
  bool first;
  {
    std::lock_guard lock(inbox_mu_);
    first = inbox_.empty();
    inbox_.push_back(std::move(message));
  }
  if (first) loop_.Post([self = shared_from_this()] { self->DrainInbox(); });
}

// ---- loop thread: set-up and shutdown ---------------------------------------------------

halite::Status PeerChannel::Impl::StartOnLoop(const std::vector<KeyReading>& keys) {
  HALITE_DCHECK(loop_.IsCurrentThread());
  try {
    // The ZAP handler goes first: libzmq admits every CURVE client while none is bound.
    zap_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::rep);
    zap_->set(zmq::sockopt::linger, 0);
    try {
      zap_->bind(kZapEndpoint);
    } catch (const zmq::error_t& e) {
      CloseSockets();
      if (e.num() == EADDRINUSE) {
        return Error::FailedPrecondition(
            "this ZeroMQ context already has a ZAP handler; the peer channel needs a context "
            "of its own");
      }
      return Error::Internal(std::string("ZAP handler bind: ") + e.what());
    }
    router_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::router);
    router_->set(zmq::sockopt::linger, 0);
    router_->set(zmq::sockopt::curve_server, true);
    router_->set(zmq::sockopt::curve_secretkey, options_.keys.secret_key);
    router_->set(zmq::sockopt::zap_domain, kZapDomain);
    router_->set(zmq::sockopt::sndhwm, kSendHwm);
    router_->set(zmq::sockopt::rcvhwm, kRecvHwm);
    router_->set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(options_.max_message_bytes));
    router_->set(zmq::sockopt::handshake_ivl, 10000);
    if (zmq_socket_monitor(router_->handle(), monitor_endpoint_.c_str(), kHandshakeFailures) != 0) {
      std::string why = zmq_strerror(zmq_errno());
      CloseSockets();
      return Error::Internal("zmq_socket_monitor: " + why);
    }
    monitor_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pair);
    monitor_->set(zmq::sockopt::linger, 0);
    monitor_->connect(monitor_endpoint_);
    try {
      router_->bind(options_.bind_endpoint);
    } catch (const zmq::error_t& e) {
      CloseSockets();
      return Error::Unavailable("peer channel cannot bind " + options_.bind_endpoint + ": " +
                                e.what());
    }
  } catch (const zmq::error_t& e) {
    CloseSockets();
    return Error::Internal(std::string("peer channel set-up: ") + e.what());
  }
  zap_watch_ = loop_.Watch(*zap_, [this] { OnZapReadable(); });
  monitor_watch_ = loop_.Watch(*monitor_, [this] { OnMonitorReadable(); });
  router_watch_ = loop_.Watch(*router_, [this] { OnRouterReadable(); });
  for (std::size_t i = 0; i < links_.size(); ++i) ApplyKey(i, keys[i]);
  heartbeat_timer_ = loop_.RunEvery(options_.heartbeat_interval, [this] { OnHeartbeatTick(); });
  ack_timer_ = loop_.RunEvery(options_.ack_interval, [this] { OnAckTick(); });
  // The hook keeps this object alive until the loop stops; CloseOnLoop is idempotent.
  loop_.AddShutdownHook([self = shared_from_this()] { self->CloseOnLoop(); });
  return OkStatus();
}

void PeerChannel::Impl::CloseSockets() {
  for (Link& link : links_) {
    if (link.watch != 0) loop_.Unwatch(link.watch);
    link.watch = 0;
    link.dealer.reset();
    link.connected = false;
  }
  // The ROUTER goes before the ZAP handler so that no handshake is ever left without one.
  if (router_watch_ != 0) loop_.Unwatch(router_watch_);
  router_watch_ = 0;
  router_.reset();
  if (monitor_watch_ != 0) loop_.Unwatch(monitor_watch_);
  monitor_watch_ = 0;
  monitor_.reset();
  if (zap_watch_ != 0) loop_.Unwatch(zap_watch_);
  zap_watch_ = 0;
  zap_.reset();
}

void PeerChannel::Impl::CloseOnLoop() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  if (closed_.exchange(true)) return;
  if (heartbeat_timer_ != 0) loop_.CancelTimer(heartbeat_timer_);
  if (ack_timer_ != 0) loop_.CancelTimer(ack_timer_);
  heartbeat_timer_ = ack_timer_ = 0;
  // Last acks, best effort: a restarted receiver then re-delivers less.
  for (std::size_t i = 0; i < inbound_.size(); ++i) {
    if (inbound_[i].unacked > 0) SendAck(i, false);
  }
  CloseSockets();
  std::lock_guard lock(stats_mu_);
  for (PeerLinkStatus& status : stats_) {
    status.connected = false;
    status.problem = "peer channel stopped";
  }
}

// ---- loop thread: keys ------------------------------------------------------------------

void PeerChannel::Impl::ApplyKey(std::size_t i, const KeyReading& reading) {
  HALITE_DCHECK(loop_.IsCurrentThread());
  Link& link = links_[i];
  if (reading.key.empty()) {
    if (!link.server_key.empty()) {
      // A shared filesystem that hiccups must not cut a working link.
      spdlog::warn("peer {}: {}; keeping its known key", link.id, reading.problem);
    } else {
      link.key_problem = reading.problem;
      PublishLink(i);
    }
    return;
  }
  if (reading.key == link.server_key && link.dealer != nullptr) return;
  std::string problem;
  if (reading.key == options_.keys.public_key) {
    problem = "peers/" + link.id + ".curve holds this master's own key";
  }
  for (std::size_t j = 0; j < links_.size() && problem.empty(); ++j) {
    if (j != i && links_[j].server_key == reading.key) {
      problem = "peers/" + link.id + ".curve holds the same key as peer " + links_[j].id;
    }
  }
  if (!problem.empty()) {
    spdlog::error("peer {}: {}; the link stays down", link.id, problem);
    link.key_problem = problem;
    PublishLink(i);
    return;
  }
  bool changed = !link.server_key.empty();
  link.server_key = reading.key;
  link.key_problem.clear();
  RebuildZapKeys();
  CreateDealer(i);
  spdlog::info("peer {}: {} CURVE key, connecting to {}", link.id, changed ? "new" : "loaded",
               link.endpoint);
}

void PeerChannel::Impl::RebuildZapKeys() {
  zap_keys_.clear();
  for (std::size_t i = 0; i < links_.size(); ++i) {
    if (!links_[i].server_key.empty()) zap_keys_[CurveKeyBytes(links_[i].server_key)] = i;
  }
}

void PeerChannel::Impl::CreateDealer(std::size_t i) {
  Link& link = links_[i];
  if (link.watch != 0) loop_.Unwatch(link.watch);
  link.watch = 0;
  link.dealer.reset();
  link.connected = false;
  link.send_next = link.low();  // a new connection starts from the oldest unacknowledged
  try {
    auto dealer = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
    dealer->set(zmq::sockopt::linger, 0);
    // Queue only on a finished (authenticated) connection: while the peer is away sends
    // fail fast and the backlog, not ZeroMQ, holds the messages.
    dealer->set(zmq::sockopt::immediate, true);
    dealer->set(zmq::sockopt::sndhwm, kSendHwm);
    dealer->set(zmq::sockopt::rcvhwm, kRecvHwm);
    dealer->set(zmq::sockopt::reconnect_ivl, 100);
    dealer->set(zmq::sockopt::reconnect_ivl_max, 2000);
    dealer->set(zmq::sockopt::handshake_ivl, 10000);
    dealer->set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(4096));
    dealer->set(zmq::sockopt::curve_serverkey, link.server_key);
    dealer->set(zmq::sockopt::curve_publickey, options_.keys.public_key);
    dealer->set(zmq::sockopt::curve_secretkey, options_.keys.secret_key);
    dealer->connect(link.endpoint);
    link.dealer = std::move(dealer);
    link.dealer_since = Clock::now();
  } catch (const zmq::error_t& e) {
    link.key_problem = "cannot connect to " + link.endpoint + ": " + e.what();
    spdlog::error("peer {}: {}", link.id, link.key_problem);
    PublishLink(i);
    return;
  }
  link.watch = loop_.Watch(*link.dealer, [this, i] { OnDealerReadable(i); });
  PublishLink(i);
}

// ---- loop thread: sending ---------------------------------------------------------------

void PeerChannel::Impl::DrainInbox() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  std::vector<PeerMessage> batch;
  {
    std::lock_guard lock(inbox_mu_);
    batch.swap(inbox_);
  }
  if (closed_) return;
  for (PeerMessage& message : batch) {
    auto shared = std::make_shared<const PeerMessage>(std::move(message));
    for (std::size_t i = 0; i < links_.size(); ++i) Enqueue(i, shared);
  }
  for (std::size_t i = 0; i < links_.size(); ++i) {
    Pump(i);
    PublishLink(i);
  }
}

void PeerChannel::Impl::Enqueue(std::size_t i, const std::shared_ptr<const PeerMessage>& message) {
  Link& link = links_[i];
  link.backlog.push_back(Pending{link.next_seq++, message});
  if (link.backlog.size() <= options_.backlog_max) return;
  link.backlog.pop_front();
  link.send_next = std::max(link.send_next, link.low());
  if (link.burst_drops == 0) {
    spdlog::warn("peer {}: backlog full ({} messages); dropping the oldest until it catches up",
                 link.id, options_.backlog_max);
  }
  ++link.burst_drops;
  link.dropped_since_tick = true;
  std::lock_guard lock(stats_mu_);
  ++stats_[i].dropped;
}

void PeerChannel::Impl::Pump(std::size_t i) {
  Link& link = links_[i];
  // Data goes out only on a link the peer answers; until then heartbeats probe it, and the
  // first answer rewinds to the oldest unacknowledged message.
  if (link.dealer == nullptr || !link.connected || link.send_next >= link.next_seq) return;
  bool sent_any = false;
  const std::uint64_t low = link.low();
  try {
    while (link.send_next < link.next_seq) {
      const Pending& pending = link.backlog[link.send_next - low];
      std::string frame = EncodeDataFrame(pending.seq, epoch_, low, pending.message->kind,
                                          pending.message->payload);
      if (!link.dealer->send(zmq::buffer(frame), zmq::send_flags::dontwait)) {
        ScheduleRetry(i);  // EAGAIN: high-water mark, or no connection
        break;
      }
      ++link.send_next;
      sent_any = true;
    }
  } catch (const zmq::error_t& e) {
    spdlog::error("peer {}: send failed: {}", link.id, e.what());
  }
  if (sent_any) loop_.MarkDirty(link.watch);
}

void PeerChannel::Impl::ScheduleRetry(std::size_t i) {
  Link& link = links_[i];
  if (link.retry_pending) return;
  link.retry_pending = true;
  loop_.RunAfter(kSendRetryDelay, [this, i] {
    if (closed_) return;
    links_[i].retry_pending = false;
    Pump(i);
  });
}

void PeerChannel::Impl::OnHeartbeatTick() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  const auto now = Clock::now();
  for (std::size_t i = 0; i < links_.size(); ++i) {
    Link& link = links_[i];
    if (link.burst_drops > 0 && !link.dropped_since_tick) {
      std::uint64_t total;
      {
        std::lock_guard lock(stats_mu_);
        total = stats_[i].dropped;
      }
      spdlog::warn("peer {}: backlog overflow over: {} messages dropped ({} in total)", link.id,
                   link.burst_drops, total);
      link.burst_drops = 0;
    }
    link.dropped_since_tick = false;
    if (link.dealer == nullptr) continue;
    if (link.connected && (!link.last_reply || now - *link.last_reply > options_.link_timeout)) {
      link.connected = false;
      spdlog::warn("peer {} ({}) is down: no reply for {} ms; {} messages wait for it", link.id,
                   link.endpoint, options_.link_timeout.count(), link.backlog.size());
    }
    if (!link.connected) {
      // libzmq gives up on a connection whose handshake was refused (the peer did not know
      // our key yet) instead of reconnecting, so a link that stays silent gets a new socket.
      auto since = std::max(link.dealer_since, link.last_reply.value_or(link.dealer_since));
      if (now - since > options_.link_timeout) {
        spdlog::debug("peer {}: no reply, reconnecting with a new socket", link.id);
        CreateDealer(i);
        if (link.dealer == nullptr) continue;
      }
    }
    HeartbeatFrame hb{epoch_, link.low(), link.send_next};
    try {
      (void)link.dealer->send(zmq::buffer(EncodeHeartbeatFrame(hb)), zmq::send_flags::dontwait);
    } catch (const zmq::error_t& e) {
      spdlog::error("peer {}: heartbeat send failed: {}", link.id, e.what());
    }
    loop_.MarkDirty(link.watch);
    Pump(i);
    PublishLink(i);
  }
}

// ---- loop thread: our links' replies ----------------------------------------------------

void PeerChannel::Impl::OnDealerReadable(std::size_t i) {
  Link& link = links_[i];
  try {
    for (int n = 0; n < kReadBatch && link.dealer != nullptr; ++n) {
      zmq::message_t message;
      if (!link.dealer->recv(message, zmq::recv_flags::dontwait)) break;
      bool more = message.more();
      DiscardRest(*link.dealer, more);
      auto ack = more ? Result<AckFrame>(Error::InvalidArgument("multipart ack"))
                      : DecodeAckFrame(message.to_string_view());
      if (!ack.ok()) {
        std::uint64_t suppressed;
        if (malformed_log_.Allow(&suppressed)) {
          spdlog::warn("peer {}: bad reply dropped: {} ({} more not logged)", link.id,
                       ack.error().ToString(), suppressed);
        }
        continue;
      }
      OnAck(i, *ack);
    }
  } catch (const zmq::error_t& e) {
    spdlog::error("peer {}: receive failed: {}", link.id, e.what());
  }
  Pump(i);
  PublishLink(i);
}

void PeerChannel::Impl::OnAck(std::size_t i, const AckFrame& ack) {
  Link& link = links_[i];
  link.last_reply = Clock::now();
  Touch(i);
  if (!link.connected) {
    link.connected = true;
    link.send_next = link.low();  // resend everything unacknowledged, oldest first
    spdlog::info("peer {} ({}) is up; {} messages to send", link.id, link.endpoint,
                 link.backlog.size());
  }
  if (ack.epoch != epoch_) return;  // about an earlier run of this process
  std::uint64_t acked = 0;
  while (!link.backlog.empty() && link.backlog.front().seq <= ack.ack) {
    link.backlog.pop_front();
    ++acked;
  }
  if (acked > 0) {
    std::lock_guard lock(stats_mu_);
    stats_[i].sent += acked;
  }
  link.send_next = std::max(link.send_next, link.low());
  if (ack.resend && ack.ack + 1 < link.send_next) {
    link.send_next = std::max(ack.ack + 1, link.low());
  }
}

// ---- loop thread: receiving -------------------------------------------------------------

void PeerChannel::Impl::OnRouterReadable() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  try {
    for (int n = 0; n < kReadBatch && router_ != nullptr; ++n) {
      zmq::message_t routing_id;
      if (!router_->recv(routing_id, zmq::recv_flags::dontwait)) break;
      if (!routing_id.more()) continue;
      zmq::message_t body;
      if (!router_->recv(body, zmq::recv_flags::dontwait)) break;
      bool more = body.more();
      DiscardRest(*router_, more);
      // The ZAP handler named the peer; nothing the connection sends can change that.
      const char* user_id = nullptr;
      try {
        user_id = body.gets("User-Id");
      } catch (const zmq::error_t&) {
        user_id = nullptr;
      }
      auto it = user_id == nullptr ? index_by_id_.end() : index_by_id_.find(user_id);
      if (it == index_by_id_.end()) continue;
      const std::size_t i = it->second;
      Result<SenderFrame> frame =
          more ? Result<SenderFrame>(Error::InvalidArgument("multipart frame"))
               : DecodeSenderFrame(body.to_string_view(), options_.max_message_bytes);
      if (!frame.ok()) {
        std::uint64_t suppressed;
        if (malformed_log_.Allow(&suppressed)) {
          spdlog::warn("peer {}: bad frame dropped: {} ({} more not logged)", links_[i].id,
                       frame.error().ToString(), suppressed);
        }
        continue;
      }
      Touch(i);
      std::string_view route = routing_id.to_string_view();
      if (inbound_[i].routing_id != route) inbound_[i].routing_id = std::string(route);
      if (auto* data = std::get_if<DataFrame>(&*frame)) {
        OnData(i, std::move(*data));
      } else {
        OnHeartbeat(i, std::get<HeartbeatFrame>(*frame));
      }
    }
  } catch (const zmq::error_t& e) {
    spdlog::error("peer channel: receive failed: {}", e.what());
  }
}

bool PeerChannel::Impl::FollowEpoch(std::size_t i, std::uint64_t epoch, std::uint64_t low) {
  Inbound& in = inbound_[i];
  if (in.epoch == epoch) {
    if (low > in.expected) in.expected = low;  // the sender dropped those (backlog overflow)
    return true;
  }
  if (std::find(in.retired.begin(), in.retired.end(), epoch) != in.retired.end()) return false;
  if (in.epoch != 0) {
    spdlog::info("peer {} restarted (new sender epoch)", links_[i].id);
    in.retired.push_back(in.epoch);
    if (in.retired.size() > kRetiredEpochs) in.retired.pop_front();
  }
  in.epoch = epoch;
  in.expected = low;
  in.unacked = 0;
  in.nacked = 0;
  return true;
}

void PeerChannel::Impl::OnData(std::size_t i, DataFrame data) {
  if (!FollowEpoch(i, data.epoch, data.low)) return;
  Inbound& in = inbound_[i];
  if (data.seq < in.expected) {
    ++in.unacked;  // a duplicate: make sure the sender hears we have it
    return;
  }
  if (data.seq > in.expected) {
    RequestResend(i);
    return;
  }
  ++in.expected;
  ++in.unacked;
  {
    std::lock_guard lock(stats_mu_);
    ++stats_[i].received;
  }
  if (handler_) handler_(links_[i].id, PeerMessage{std::move(data.kind), std::move(data.payload)});
  if (in.unacked >= kAckEvery) SendAck(i, false);
}

void PeerChannel::Impl::OnHeartbeat(std::size_t i, const HeartbeatFrame& hb) {
  if (!FollowEpoch(i, hb.epoch, hb.low)) return;
  // Frames on one connection arrive in order, so anything sent before this heartbeat and
  // still missing was lost with an earlier connection.
  bool missing = inbound_[i].expected < hb.next;
  if (missing) {
    inbound_[i].nacked = inbound_[i].expected;
    inbound_[i].nack_time = Clock::now();
  }
  SendAck(i, missing);  // also the heartbeat's answer, which keeps the sender's link up
}

void PeerChannel::Impl::RequestResend(std::size_t i) {
  Inbound& in = inbound_[i];
  auto now = Clock::now();
  // Every frame after a gap lands here; ask once per gap (again after a heartbeat interval).
  if (in.nacked == in.expected && now - in.nack_time < options_.heartbeat_interval) return;
  in.nacked = in.expected;
  in.nack_time = now;
  SendAck(i, true);
}

void PeerChannel::Impl::SendAck(std::size_t i, bool resend) {
  Inbound& in = inbound_[i];
  if (router_ == nullptr || in.routing_id.empty() || in.epoch == 0) return;
  std::string frame = EncodeAckFrame(AckFrame{in.expected - 1, in.epoch, resend});
  try {
    // A full pipe drops the ack; the next cumulative one covers it.
    if (router_->send(zmq::buffer(in.routing_id),
                      zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
      (void)router_->send(zmq::buffer(frame), zmq::send_flags::dontwait);
    }
  } catch (const zmq::error_t& e) {
    spdlog::error("peer {}: ack send failed: {}", links_[i].id, e.what());
  }
  in.unacked = 0;
  loop_.MarkDirty(router_watch_);
}

void PeerChannel::Impl::OnAckTick() {
  for (std::size_t i = 0; i < inbound_.size(); ++i) {
    if (inbound_[i].unacked > 0) SendAck(i, false);
  }
}

// ---- loop thread: authentication --------------------------------------------------------

void PeerChannel::Impl::OnZapReadable() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  try {
    // ZAP request (RFC 27): version, request id, domain, address, routing id, mechanism,
    // credentials...
    std::vector<zmq::message_t> frames;
    for (;;) {
      zmq::message_t frame;
      if (!zap_->recv(frame, zmq::recv_flags::dontwait)) {
        if (frames.empty()) return;
        break;  // cannot happen: multipart messages arrive whole
      }
      bool more = frame.more();
      frames.push_back(std::move(frame));
      if (!more) break;
    }
    std::string request_id = frames.size() > 1 ? frames[1].to_string() : std::string();
    std::string status = "400";
    std::string status_text = "not a configured cluster peer";
    std::string user_id;
    if (frames.size() >= 7 && frames[0].to_string_view() == "1.0" &&
        frames[2].to_string_view() == kZapDomain && frames[5].to_string_view() == "CURVE") {
      auto it = zap_keys_.find(frames[6].to_string());
      if (it != zap_keys_.end()) {
        status = "200";
        status_text = "OK";
        user_id = links_[it->second].id;
      }
    }
    if (status != "200") {
      std::uint64_t suppressed;
      if (zap_log_.Allow(&suppressed)) {
        std::string key = "(none)";
        if (frames.size() >= 7 && frames[6].size() == 32) {
          char z85[41] = {};
          zmq_z85_encode(z85, frames[6].data<std::uint8_t>(), 32);
          key = z85;
        }
        spdlog::warn(
            "peer channel: refused a connection from {} with CURVE key {} ({} more "
            "not logged)",
            frames.size() > 3 ? frames[3].to_string() : std::string("?"), key, suppressed);
      }
    }
    zap_->send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
    zap_->send(zmq::buffer(request_id), zmq::send_flags::sndmore);
    zap_->send(zmq::buffer(status), zmq::send_flags::sndmore);
    zap_->send(zmq::buffer(status_text), zmq::send_flags::sndmore);
    zap_->send(zmq::buffer(user_id), zmq::send_flags::sndmore);
    zap_->send(zmq::message_t(), zmq::send_flags::none);
    loop_.MarkDirty(zap_watch_);
  } catch (const zmq::error_t& e) {
    spdlog::error("peer channel: ZAP handler failed: {}", e.what());
  }
}

void PeerChannel::Impl::OnMonitorReadable() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  try {
    zmq::message_t event;
    if (!monitor_->recv(event, zmq::recv_flags::dontwait)) return;
    bool more = event.more();
    DiscardRest(*monitor_, more);
    if (event.size() < 6) return;
    std::uint16_t id;
    std::uint32_t value;
    std::memcpy(&id, event.data(), sizeof id);
    std::memcpy(&value, static_cast<const char*>(event.data()) + sizeof id, sizeof value);
    if ((id & kHandshakeFailures) == 0) return;
    rejections_.fetch_add(1);
    std::uint64_t suppressed;
    if (rejection_log_.Allow(&suppressed)) {
      spdlog::warn("peer channel: refused a handshake on {}: {} ({} more not logged)",
                   options_.bind_endpoint, HandshakeFailureReason(id, value), suppressed);
    }
  } catch (const zmq::error_t& e) {
    spdlog::error("peer channel: monitor receive failed: {}", e.what());
  }
}

// ---- loop thread: status ----------------------------------------------------------------

void PeerChannel::Impl::Touch(std::size_t i) {
  auto now = std::chrono::system_clock::now();
  std::lock_guard lock(stats_mu_);
  stats_[i].last_contact = now;
}

void PeerChannel::Impl::PublishLink(std::size_t i) {
  const Link& link = links_[i];
  std::string problem;
  if (!link.key_problem.empty()) {
    problem = link.key_problem;
  } else if (closed_) {
    problem = "peer channel stopped";
  } else if (!link.connected) {
    if (link.last_reply) {
      auto silent =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - *link.last_reply);
      problem = "no reply from " + link.endpoint + " for " + std::to_string(silent.count()) + " ms";
    } else {
      problem =
          "no reply from " + link.endpoint + " yet (down, or it does not know this master's key)";
    }
  }
  std::lock_guard lock(stats_mu_);
  PeerLinkStatus& status = stats_[i];
  status.connected = link.connected;
  status.backlog = link.backlog.size();
  if (status.problem != problem) status.problem = std::move(problem);
}

// ---- PeerChannel ------------------------------------------------------------------------

PeerChannel::PeerChannel(zmq::context_t& context, transport::ZmqLoop& loop,
                         PeerChannelOptions options)
    : impl_(std::make_shared<Impl>(context, loop, std::move(options))) {}

PeerChannel::~PeerChannel() { impl_->Shutdown(); }

void PeerChannel::SetHandler(Handler handler) { impl_->SetHandler(std::move(handler)); }

halite::Status PeerChannel::Start() { return impl_->Start(); }

void PeerChannel::Broadcast(PeerMessage message) { impl_->Broadcast(std::move(message)); }

std::vector<PeerLinkStatus> PeerChannel::Status() const { return impl_->Snapshot(); }

std::uint64_t PeerChannel::unauthenticated_rejections() const { return impl_->rejections(); }

std::uint64_t PeerChannel::epoch() const { return impl_->epoch(); }

}  // namespace halite::cluster
