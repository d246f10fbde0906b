#include "halite/master/publisher.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstring>
#include <future>

#include "halite/wire/event.h"

namespace halite::master {

Publisher::Publisher(zmq::context_t& context, transport::ZmqLoop& loop, AesKeyRing& aes,
                     wire::RsaPrivateKey signing_key, PublisherOptions options)
    : context_(context),
      loop_(loop),
      aes_(aes),
      signing_key_(std::move(signing_key)),
      options_(std::move(options)) {
  if (options_.replay) replay_.emplace(options_.replay_options);
}

Status Publisher::Start() {
  std::promise<Status> bound;
  loop_.Post([this, &bound] {
    try {
      pub_ = std::make_unique<zmq::socket_t>(
          context_, replay_ ? zmq::socket_type::xpub : zmq::socket_type::pub);
      if (replay_) pub_->set(zmq::sockopt::xpub_verbose, 1);
      pub_->set(zmq::sockopt::sndhwm, options_.pub_hwm);
      pub_->set(zmq::sockopt::backlog, options_.backlog);
      // What a subscriber sends is subscriptions: "" from every minion (a Salt topic with
      // zmq_filtering is 41 bytes). libzmq keeps each for as long as its connection lives, so
      // a larger frame drops the connection instead (docs/security.md, finding 21).
      pub_->set(zmq::sockopt::maxmsgsize, kMaxSubscriptionBytes);
      pub_->set(zmq::sockopt::linger, 1000);
      pub_->set(zmq::sockopt::ipv6, options_.ipv6 ? 1 : 0);
      pub_->set(zmq::sockopt::tcp_keepalive, options_.tcp_keepalive);
      pub_->set(zmq::sockopt::tcp_keepalive_idle, options_.tcp_keepalive_idle);
      pub_->set(zmq::sockopt::tcp_keepalive_cnt, options_.tcp_keepalive_cnt);
      pub_->set(zmq::sockopt::tcp_keepalive_intvl, options_.tcp_keepalive_intvl);
      pub_->bind(options_.publish_endpoint);
      events_socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pub);
      events_socket_->set(zmq::sockopt::sndhwm, 100000);
      events_socket_->set(zmq::sockopt::linger, 0);
      events_socket_->bind(options_.event_endpoint);
      if (!options_.event_socket_path.empty()) {
        ::chmod(options_.event_socket_path.c_str(), options_.event_socket_mode);
      }
      // Count subscriber connections for /metrics through libzmq's socket monitor.
      const std::string monitor_ep =
          "inproc://halite-pub-monitor-" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
      if (zmq_socket_monitor(pub_->handle(), monitor_ep.c_str(),
                             ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) == 0) {
        monitor_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pair);
        monitor_->set(zmq::sockopt::linger, 0);
        monitor_->connect(monitor_ep);
        monitor_watch_ = loop_.Watch(*monitor_, [this] {
          zmq::message_t event;
          if (!monitor_->recv(event, zmq::recv_flags::dontwait)) return;
          zmq::message_t address;
          if (event.more()) (void)monitor_->recv(address, zmq::recv_flags::dontwait);
          if (event.size() < 2) return;
          std::uint16_t id = 0;
          std::memcpy(&id, event.data(), sizeof id);
          if (id == ZMQ_EVENT_ACCEPTED) connected_++;
          if (id == ZMQ_EVENT_DISCONNECTED) connected_--;
        });
      }
      if (replay_) pub_watch_ = loop_.Watch(*pub_, [this] { OnSubscriptionReadable(); });
      loop_.AddShutdownHook([this] {
        if (replay_timer_ != 0) loop_.CancelTimer(replay_timer_);
        if (pub_watch_ != 0) loop_.Unwatch(pub_watch_);
        if (monitor_) {
          loop_.Unwatch(monitor_watch_);
          zmq_socket_monitor(pub_->handle(), nullptr, 0);
          monitor_.reset();
        }
        pub_.reset();
        events_socket_.reset();
      });
      bound.set_value(OkStatus());
    } catch (const zmq::error_t& e) {
      pub_.reset();
      events_socket_.reset();
      bound.set_value(Error::Unavailable("publisher cannot bind " + options_.publish_endpoint +
                                         " / " + options_.event_endpoint + ": " + e.what()));
    }
  });
  return bound.get_future().get();
}

void Publisher::AddEventObserver(EventObserver observer) {
  observers_.push_back(std::move(observer));
}

void Publisher::Fire(std::string tag, wire::Value data) {
  wire::AddStamp(data);
  loop_.Post([this, tag = std::move(tag), data = std::move(data)] {
    SendEvent(tag, data);
    for (const auto& observer : observers_) observer(tag, data);
  });
}

void Publisher::FireLocalOnly(std::string tag, wire::Value data) {
  loop_.Post([this, tag = std::move(tag), data = std::move(data)] { SendEvent(tag, data); });
}

void Publisher::SendEvent(const std::string& tag, const wire::Value& data) {
  HALITE_DCHECK(loop_.IsCurrentThread());
  if (replay_) NoteReturn(tag);
  if (!events_socket_) return;
  std::string packed = wire::PackEvent(tag, data);
  try {
    events_socket_->send(zmq::buffer(packed), zmq::send_flags::dontwait);
    events_++;
  } catch (const zmq::error_t& e) {
    spdlog::error("event bus send failed for {}: {}", tag, e.what());
  }
}

// salt/job/<jid>/ret/<id>: every return of the cluster passes here (this master's own and
// those its peers forward), so replays can leave out the minions that answered.
void Publisher::NoteReturn(std::string_view tag) {
  constexpr std::string_view kPrefix = "salt/job/";
  if (tag.substr(0, kPrefix.size()) != kPrefix) return;
  std::string_view rest = tag.substr(kPrefix.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return;
  std::string_view jid = rest.substr(0, slash);
  std::string_view tail = rest.substr(slash);
  constexpr std::string_view kRet = "/ret/";
  if (tail.substr(0, kRet.size()) != kRet) return;
  replay_->Returned(jid, tail.substr(kRet.size()));
}

Status Publisher::Publish(wire::Value pub_load) {
  loop_.Post([this, load = std::move(pub_load)]() mutable {
    if (!pub_) return;
    if (replay_) replay_->Remember(load, PublishReplay::Clock::now());
    if (SendOnLoop(std::move(load))) published_++;
  });
  return OkStatus();
}

bool Publisher::SendOnLoop(wire::Value load) {
  HALITE_DCHECK(loop_.IsCurrentThread());
  CrypticlePtr key;
  if (options_.with_serial) {
    // A replay gets a new serial too: the minion's serial guard drops a repeated one.
    auto [k, serial] = aes_.NextSerial();
    key = std::move(k);
    load.Set("serial", static_cast<unsigned long long>(serial));  // NOLINT
  } else {
    key = aes_.Current();
  }
  std::string ciphertext = key->Dumps(load);
  wire::Value envelope = wire::Value::MapOf({{"enc", "aes"}, {"load", ciphertext}});
  if (options_.sign_pub_messages) {
    auto sig = signing_key_.Sign(ciphertext, options_.sig_hash);
    if (!sig.ok()) {
      spdlog::error("cannot sign publish: {}", sig.error().ToString());
      return false;
    }
    envelope.Set("sig_algo", std::string(wire::SigAlgoName(options_.sig_hash)));
    envelope.Set("sig", std::move(*sig));
  }
  std::string frame = wire::Pack(envelope);
  bool sent = false;
  try {
    pub_->send(zmq::buffer(frame), zmq::send_flags::dontwait);
    sent = true;
  } catch (const zmq::error_t& e) {
    spdlog::error("publish failed: {}", e.what());
  }
  if (pub_watch_ != 0) loop_.MarkDirty(pub_watch_);
  return sent;
}

// One message per subscription change: "\x01<topic>" subscribes, "\x00<topic>" unsubscribes.
// With XPUB_VERBOSE every minion's subscription arrives, not just the first per topic.
void Publisher::OnSubscriptionReadable() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  zmq::message_t message;
  try {
    if (!pub_->recv(message, zmq::recv_flags::dontwait)) return;
  } catch (const zmq::error_t& e) {
    spdlog::warn("publisher: reading subscriptions failed: {}", e.what());
    return;
  }
  if (message.size() == 0 || static_cast<const char*>(message.data())[0] != 1) return;
  subscriptions_++;
  const auto now = PublishReplay::Clock::now();
  auto at = replay_->OnSubscriber(now);
  if (!at) return;
  auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(*at - now);
  replay_timer_ = loop_.RunAfter(std::max(delay, std::chrono::milliseconds(0)), [this] {
    replay_timer_ = 0;
    ReplayOnLoop();
  });
}

void Publisher::ReplayOnLoop() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  if (!pub_) return;
  std::vector<wire::Value> loads = replay_->TakeReplay(PublishReplay::Clock::now());
  if (loads.empty()) return;
  replays_++;
  spdlog::info("publisher: minions subscribed; re-publishing {} live job(s)", loads.size());
  for (wire::Value& load : loads) {
    if (SendOnLoop(std::move(load))) replayed_++;
  }
}

}  // namespace halite::master
