// PeerChannel: the caller's side, the peers' keys, socket set-up, authentication and status
// (the streams are in peer_link.cc; the shared state in peer_channel_impl.h).
#include "halite/cluster/peer_channel.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <zmq.h>

#include <cerrno>
#include <future>
#include <random>
#include <unordered_set>

#include "peer_channel_impl.h"

namespace halite::cluster {

using namespace peer_internal;
using transport::ZmqLoop;

namespace {

std::uint64_t NewEpoch() {
  std::random_device random;
  std::uint64_t epoch = 0;
  while (epoch == 0) {
    epoch = (static_cast<std::uint64_t>(random()) << 32) ^ static_cast<std::uint64_t>(random());
  }
  return epoch;
}

}  // namespace

namespace peer_internal {

bool LogLimiter::Allow(std::uint64_t* suppressed) {
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

void DiscardRest(zmq::socket_t& socket, bool more) {
  while (more) {
    zmq::message_t rest;
    if (!socket.recv(rest, zmq::recv_flags::dontwait)) return;
    more = rest.more();
  }
}

}  // namespace peer_internal

PeerChannel::Impl::Impl(zmq::context_t& context, ZmqLoop& loop, PeerChannelOptions options)
    : context_(context),
      loop_(loop),
      options_(std::move(options)),
      epoch_(NewEpoch()),
      monitor_endpoint_("inproc://halite-cluster-monitor-" + std::to_string(epoch_)) {
  links_.resize(options_.peers.size());
  inbound_.resize(options_.peers.size());
  publish_held_.assign(options_.peers.size(), 0);
  for (std::size_t i = 0; i < options_.peers.size(); ++i) {
    links_[i].id = options_.peers[i].id;
    links_[i].endpoint = options_.peers[i].endpoint;
    index_by_id_.emplace(links_[i].id, i);
    PeerLinkStatus status;
    status.id = links_[i].id;
    status.endpoint = links_[i].endpoint;
    status.problem = "peer channel not started";
    stats_.push_back(std::move(status));
    listed_.push_back(true);
  }
}

PeerChannel::Impl::~Impl() {
  // Sockets are closed on the loop (CloseOnLoop) before the last reference goes.
  HALITE_CHECK(router_ == nullptr && zap_ == nullptr) << "peer channel sockets left open";
}

void PeerChannel::Impl::SetHandler(Handler handler) {
  HALITE_CHECK(!started_) << "PeerChannel::SetHandler after Start";
  handler_ = std::move(handler);
}

std::vector<PeerLinkStatus> PeerChannel::Impl::Snapshot() const {
  std::vector<PeerLinkStatus> snapshot;
  {
    std::lock_guard lock(stats_mu_);
    for (std::size_t i = 0; i < stats_.size(); ++i) {
      if (listed_[i]) snapshot.push_back(stats_[i]);
    }
  }
  for (PeerLinkStatus& status : snapshot) {
    status.backlog = status.events.queued + status.publishes.queued;
    status.sent = status.events.sent + status.publishes.sent;
    status.received = status.events.received + status.publishes.received;
    status.dropped = status.events.dropped + status.publishes.dropped;
  }
  return snapshot;
}

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
  if (options_.event_backlog_max == 0) problems.push_back("event_backlog_max must be at least 1");
  if (options_.event_backlog_max_bytes == 0) {
    problems.push_back("event_backlog_max_bytes must be at least 1");
  }
  if (options_.publish_queue_max == 0) problems.push_back("publish_queue_max must be at least 1");
  if (options_.publish_max_age.count() < 0) problems.push_back("publish_max_age < 0");
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
      if (now[i] == last[i]) continue;  // configured peers only: indices below peers.size()
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

bool PeerChannel::Impl::FitsInAFrame(const PeerMessage& message) const {
  // A peer would refuse the frame and drop the connection, again at every resend.
  if (message.kind.size() + message.payload.size() + kFrameOverhead <= options_.max_message_bytes) {
    return true;
  }
  spdlog::error("peer channel: a '{}' message of {} bytes is over max_message_bytes ({}); not sent",
                message.kind, message.payload.size(), options_.max_message_bytes);
  return false;
}

void PeerChannel::Impl::PostDrain() {
  loop_.Post([self = shared_from_this()] { self->DrainInbox(); });
}

void PeerChannel::Impl::Broadcast(PeerMessage message) {
  if (closed_ || !FitsInAFrame(message)) return;
  bool first;
  {
    std::lock_guard lock(inbox_mu_);
    first = inbox_.empty();
    inbox_.push_back(Incoming{PeerClass::kEvent, std::move(message), Clock::now()});
  }
  if (first) PostDrain();
}

halite::Status PeerChannel::Impl::BroadcastPublish(PeerMessage message) {
  if (closed_) return Error::FailedPrecondition("peer channel stopped");
  if (!FitsInAFrame(message)) {
    return Error::InvalidArgument("publish of " + std::to_string(message.payload.size()) +
                                  " bytes is over the peer channel's max_message_bytes");
  }
  std::vector<std::size_t> full;
  bool first = false;
  {
    std::lock_guard lock(inbox_mu_);
    for (std::size_t i = 0; i < publish_held_.size(); ++i) {
      if (publish_held_[i] >= options_.publish_queue_max) full.push_back(i);
    }
    if (full.empty()) {
      for (std::size_t& held : publish_held_) ++held;
      first = inbox_.empty();
      inbox_.push_back(Incoming{PeerClass::kPublish, std::move(message), Clock::now()});
    }
  }
  if (full.empty()) {
    if (first) PostDrain();
    return OkStatus();
  }
  refused_.fetch_add(1);
  std::string names;
  {
    std::lock_guard lock(stats_mu_);
    for (std::size_t i : full) {
      ++stats_[i].publishes_refused;
      names += (names.empty() ? "" : ", ") + stats_[i].id;
    }
  }
  std::uint64_t suppressed;
  if (refused_log_.Allow(&suppressed)) {
    spdlog::error(
        "peer channel: publish refused: {} unacknowledged publishes already wait for peer(s) {} "
        "({} more refusals not logged)",
        options_.publish_queue_max, names, suppressed);
  }
  return Error::ResourceExhausted("the publish queue for peer(s) " + names + " is full (" +
                                  std::to_string(options_.publish_queue_max) +
                                  " unacknowledged publishes); the job was not published");
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
  SendFinalAcks();
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
    if (j != i && !links_[j].removed && links_[j].server_key == reading.key) {
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
    if (!links_[i].removed && !links_[i].server_key.empty())
      zap_keys_[CurveKeyBytes(links_[i].server_key)] = i;
  }
}

void PeerChannel::Impl::CreateDealer(std::size_t i) {
  Link& link = links_[i];
  if (link.watch != 0) loop_.Unwatch(link.watch);
  link.watch = 0;
  link.dealer.reset();
  link.connected = false;
  link.Rewind();  // a new connection starts from the oldest unacknowledged
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
  status.events.queued = link.out[Index(PeerClass::kEvent)].queue.size();
  status.events.queued_bytes = link.out[Index(PeerClass::kEvent)].bytes;
  status.publishes.queued = link.out[Index(PeerClass::kPublish)].queue.size();
  status.publishes.queued_bytes = link.out[Index(PeerClass::kPublish)].bytes;
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

halite::Status PeerChannel::BroadcastPublish(PeerMessage message) {
  return impl_->BroadcastPublish(std::move(message));
}

void PeerChannel::AddPeer(PeerSpec peer, std::string curve_public_key) {
  impl_->AddPeer(std::move(peer), std::move(curve_public_key));
}

void PeerChannel::RemovePeer(const std::string& id) { impl_->RemovePeer(id); }

std::vector<PeerLinkStatus> PeerChannel::Status() const { return impl_->Snapshot(); }

std::uint64_t PeerChannel::unauthenticated_rejections() const { return impl_->rejections(); }

std::uint64_t PeerChannel::publishes_refused() const { return impl_->refused(); }

std::uint64_t PeerChannel::epoch() const { return impl_->epoch(); }

}  // namespace halite::cluster
