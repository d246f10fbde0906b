#include "halite/master/publisher.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

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
  transport::PubServerOptions pub = options_.port;
  pub.limits.max_frame = kMaxSubscriptionBytes;
  pub.on_subscriber = [this] { OnSubscriber(); };
  pub_ = std::make_unique<transport::PubServer>(context_, loop_, std::move(pub));
}

std::int64_t Publisher::connected_subscribers() const { return pub_->subscribers(); }
std::int64_t Publisher::publish_port_connections() const { return pub_->connections(); }
std::uint64_t Publisher::topic_subscriptions() const { return pub_->topics(); }
std::uint64_t Publisher::refused_subscribers() const { return pub_->refused(); }
std::uint64_t Publisher::dropped_publishes() const { return pub_->dropped(); }

Status Publisher::Start() {
  std::promise<Status> bound;
  loop_.Post([this, &bound] {
    if (auto st = pub_->Start(); !st.ok()) {
      bound.set_value(Error::Unavailable("publisher: " + st.error().message));
      return;
    }
    try {
      events_socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pub);
      events_socket_->set(zmq::sockopt::sndhwm, 100000);
      events_socket_->set(zmq::sockopt::linger, 0);
      events_socket_->bind(options_.event_endpoint);
      if (!options_.event_socket_path.empty()) {
        ::chmod(options_.event_socket_path.c_str(), options_.event_socket_mode);
      }
    } catch (const zmq::error_t& e) {
      pub_->Stop();
      events_socket_.reset();
      bound.set_value(
          Error::Unavailable("publisher cannot bind " + options_.event_endpoint + ": " + e.what()));
      return;
    }
    loop_.AddShutdownHook([this] {
      if (replay_timer_ != 0) loop_.CancelTimer(replay_timer_);
      pub_->Stop();
      events_socket_.reset();
    });
    bound.set_value(OkStatus());
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
  (void)pub_->Send(wire::Pack(envelope));
  return true;
}

// A connection subscribed to every publish: a minion arrived (or came back).
void Publisher::OnSubscriber() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  if (!replay_) return;
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
  std::vector<wire::Value> loads = replay_->TakeReplay(PublishReplay::Clock::now());
  if (loads.empty()) return;
  replays_++;
  spdlog::info("publisher: minions subscribed; re-publishing {} live job(s)", loads.size());
  for (wire::Value& load : loads) {
    if (SendOnLoop(std::move(load))) replayed_++;
  }
}

}  // namespace halite::master
