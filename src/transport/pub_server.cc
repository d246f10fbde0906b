#include "halite/transport/pub_server.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <vector>

namespace halite::transport {

PubServer::PubServer(zmq::context_t& context, ZmqLoop& loop, PubServerOptions options)
    : context_(context),
      loop_(loop),
      options_(std::move(options)),
      greeting_(zmtp::PubGreeting() + zmtp::ReadyCommand("PUB")) {}

PubServer::~PubServer() { HALITE_CHECK(!socket_); }

Status PubServer::Start() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  try {
    socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::stream);
    socket_->set(zmq::sockopt::sndhwm, options_.sndhwm);
    // Input is read at once; a few chunks (8 KiB each) per connection are enough.
    socket_->set(zmq::sockopt::rcvhwm, 16);
    socket_->set(zmq::sockopt::backlog, options_.backlog);
    socket_->set(zmq::sockopt::linger, 1000);
    socket_->set(zmq::sockopt::ipv6, options_.ipv6 ? 1 : 0);
    socket_->set(zmq::sockopt::tcp_keepalive, options_.tcp_keepalive);
    socket_->set(zmq::sockopt::tcp_keepalive_idle, options_.tcp_keepalive_idle);
    socket_->set(zmq::sockopt::tcp_keepalive_cnt, options_.tcp_keepalive_cnt);
    socket_->set(zmq::sockopt::tcp_keepalive_intvl, options_.tcp_keepalive_intvl);
    socket_->bind(options_.endpoint);
    last_endpoint_ = socket_->get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    socket_.reset();
    return Error::Unavailable("cannot bind " + options_.endpoint + ": " + e.what());
  }
  watch_ = loop_.Watch(*socket_, [this] { OnReadable(); });
  const auto period = std::max(std::chrono::milliseconds(10), options_.handshake_timeout / 10);
  sweep_timer_ = loop_.RunEvery(period, [this] { SweepHandshakes(); });
  return OkStatus();
}

void PubServer::Stop() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  if (!socket_) return;
  loop_.CancelTimer(sweep_timer_);
  loop_.Unwatch(watch_);
  socket_.reset();
  connections_by_id_.clear();
  pending_.clear();
  connections_ = 0;
  subscribers_ = 0;
}

// ZMQ_STREAM gives [routing id, bytes]; empty bytes announce a connection the first time and
// its end the second.
void PubServer::OnReadable() {
  zmq::message_t id;
  zmq::message_t data;
  try {
    if (!socket_->recv(id, zmq::recv_flags::dontwait)) return;
    if (!id.more() || !socket_->recv(data, zmq::recv_flags::dontwait)) return;
  } catch (const zmq::error_t& e) {
    spdlog::warn("publish port: read failed: {}", e.what());
    return;
  }
  const char* address = zmq_msg_gets(data.handle(), "Peer-Address");
  OnData(id.to_string(), data.to_string_view(), address != nullptr ? address : "?");
}

void PubServer::OnData(const std::string& id, std::string_view data, std::string peer) {
  auto it = connections_by_id_.find(id);
  if (data.empty()) {
    if (it != connections_by_id_.end()) {  // its end
      Forget(it);
      return;
    }
    // A new connection (or the end of one closed here, whose send below fails): greet it.
    zmq::message_t greeting(greeting_.data(), greeting_.size());
    if (!SendTo(id, greeting)) return;
    it = connections_by_id_.try_emplace(id, options_.limits).first;
    it->second.peer = std::move(peer);
    connections_++;
    pending_.emplace_back(ZmqLoop::Clock::now() + options_.handshake_timeout, id);
    return;
  }
  if (it == connections_by_id_.end()) return;  // closed here; its bytes were in flight
  std::vector<zmtp::SubscriberEvent> events;
  if (auto st = it->second.stream.Feed(data, events); !st.ok()) {
    Close(it, st.error().message);
    return;
  }
  Connection& c = it->second;
  for (auto& event : events) {
    switch (event.kind) {
      case zmtp::SubscriberEvent::Kind::kReady:
        break;
      case zmtp::SubscriberEvent::Kind::kPing: {
        const std::string pong = zmtp::Pong(event.data);
        zmq::message_t message(pong.data(), pong.size());
        (void)SendTo(id, message);
        break;
      }
      case zmtp::SubscriberEvent::Kind::kSubscribe:
        c.subscribed = true;
        if (!event.data.empty()) {
          topics_++;
          if (auto n = topic_log_.Pass()) {
            spdlog::warn(
                "publish port: {} subscribed to a topic (a minion with zmq_filtering?); halite "
                "publishes to \"\" only, so it receives nothing{}",
                Printable(c.peer), SuppressedSuffix(*n));
          }
        } else if (!c.everything) {
          c.everything = true;
          subscribers_++;
          subscriptions_++;
          if (options_.on_subscriber) options_.on_subscriber();
        }
        break;
      case zmtp::SubscriberEvent::Kind::kCancel:
        if (event.data.empty() && c.everything) {
          c.everything = false;
          subscribers_--;
        }
        break;
    }
  }
}

void PubServer::Close(Connections::iterator it, const std::string& why) {
  refused_++;
  if (auto n = refusal_log_.Pass()) {
    spdlog::warn("publish port: closed the connection of {}: {}{}", Printable(it->second.peer), why,
                 SuppressedSuffix(*n));
  }
  zmq::message_t end;  // empty bytes close a ZMQ_STREAM connection
  (void)SendTo(it->first, end);
  Forget(it);
}

void PubServer::Forget(Connections::iterator it) {
  if (it->second.everything) subscribers_--;
  connections_by_id_.erase(it);
  connections_--;
}

bool PubServer::SendTo(const std::string& id, zmq::message_t& message) {
  try {
    if (!socket_->send(zmq::buffer(id), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
      return false;  // its queue is full
    }
    // The routing id went: the frame is taken now (ZMQ_STREAM sends whole messages).
    (void)socket_->send(message, zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    return false;  // EHOSTUNREACH: the connection is gone (its end is on its way)
  }
  loop_.MarkDirty(watch_);
  return true;
}

std::size_t PubServer::Send(std::string_view message) {
  HALITE_DCHECK(loop_.IsCurrentThread());
  if (!socket_) return 0;
  const std::string header = zmtp::MessageHeader(message.size());
  zmq::message_t whole(header.size() + message.size());
  std::memcpy(whole.data(), header.data(), header.size());
  std::memcpy(static_cast<char*>(whole.data()) + header.size(), message.data(), message.size());
  std::size_t reached = 0;
  for (auto& [id, c] : connections_by_id_) {
    if (!c.everything) continue;
    zmq::message_t copy;
    copy.copy(whole);  // shares the bytes (refcounted), as PUB's fan-out does
    if (SendTo(id, copy)) {
      ++reached;
    } else {
      dropped_++;
    }
  }
  return reached;
}

void PubServer::SweepHandshakes() {
  const auto now = ZmqLoop::Clock::now();
  while (!pending_.empty() && pending_.front().first <= now) {
    const std::string id = std::move(pending_.front().second);
    pending_.pop_front();
    auto it = connections_by_id_.find(id);
    if (it == connections_by_id_.end() || it->second.subscribed) continue;
    Close(it, it->second.stream.ready() ? "no subscription within the handshake timeout"
                                        : "no ZMTP handshake within the handshake timeout");
  }
}

}  // namespace halite::transport
