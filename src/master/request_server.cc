#include "halite/master/request_server.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <future>

#include "halite/wire/msgpack.h"

namespace halite::master {

RequestServer::RequestServer(zmq::context_t& context, transport::ZmqLoop& loop,
                             transport::WorkerPool& workers, Handler handler,
                             RequestServerOptions options)
    : context_(context),
      loop_(loop),
      workers_(workers),
      handler_(std::move(handler)),
      options_(std::move(options)) {}

Status RequestServer::Start() {
  std::promise<Status> bound;
  loop_.Post([this, &bound] {
    try {
      router_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::router);
      router_->set(zmq::sockopt::linger, 1000);
      router_->set(zmq::sockopt::backlog, options_.backlog);
      router_->set(zmq::sockopt::ipv6, options_.ipv6 ? 1 : 0);
      router_->set(zmq::sockopt::tcp_keepalive, options_.tcp_keepalive);
      router_->set(zmq::sockopt::tcp_keepalive_idle, options_.tcp_keepalive_idle);
      // Hard cap: a frame far beyond the soft limit drops the connection instead of
      // buffering it; frames between the limits are read and answered "bad load".
      router_->set(zmq::sockopt::maxmsgsize,
                   static_cast<int64_t>(options_.max_request_bytes) * 2 + 4096);
      router_->set(zmq::sockopt::sndhwm, options_.replies_queued_per_peer);
      // A full connection is then an error on send (counted) rather than a silent drop.
      router_->set(zmq::sockopt::router_mandatory, 1);
      router_->set(zmq::sockopt::rcvhwm, 0);
      for (const auto& ep : options_.endpoints) router_->bind(ep);
      for (const auto& path : options_.ipc_paths) ::chmod(path.c_str(), options_.ipc_mode);
      watch_id_ = loop_.Watch(*router_, [this] { OnReadable(); });
      loop_.AddShutdownHook([this] {
        loop_.Unwatch(watch_id_);
        router_.reset();
      });
      bound.set_value(OkStatus());
    } catch (const zmq::error_t& e) {
      router_.reset();
      std::string eps;
      for (const auto& ep : options_.endpoints) eps += " " + ep;
      bound.set_value(Error::Unavailable("request server cannot bind" + eps + ": " + e.what()));
    }
  });
  return bound.get_future().get();
}

void RequestServer::StopIntake() { intake_ = false; }

void RequestServer::OnReadable() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  std::vector<zmq::message_t> frames;
  for (;;) {
    zmq::message_t frame;
    zmq::recv_result_t got;
    try {
      got = router_->recv(frame, zmq::recv_flags::dontwait);
    } catch (const zmq::error_t& e) {
      spdlog::error("request server recv: {}", e.what());
      return;
    }
    if (!got) {
      if (frames.empty()) return;
      break;  // a multipart message is delivered whole; this cannot happen mid-message
    }
    bool more = frame.more();
    frames.push_back(std::move(frame));
    if (!more) break;
  }
  if (frames.size() < 2) return;  // a routing id alone: nothing to answer
  received_++;
  std::string body = frames.back().to_string();
  frames.pop_back();
  if (!intake_) {
    SendReply(std::move(frames), wire::Pack(wire::Value("bad load")));
    return;
  }
  if (body.size() > options_.max_request_bytes) {
    oversize_++;
    spdlog::warn("request of {} bytes exceeds max_request_bytes ({}); answered 'bad load'",
                 body.size(), options_.max_request_bytes);
    SendReply(std::move(frames), wire::Pack(wire::Value("bad load")));
    return;
  }
  const std::size_t size = body.size();
  if (queued_.load() >= options_.max_queued ||
      queued_bytes_.load() + size > options_.max_queued_bytes) {
    shed_++;
    auto now = std::chrono::steady_clock::now();
    if (now - last_shed_log_ > std::chrono::seconds(10)) {
      last_shed_log_ = now;
      spdlog::warn(
          "request queue full ({} requests, {} bytes waiting for workers): shedding "
          "requests ({} so far)",
          queued_.load(), queued_bytes_.load(), shed_.load());
    }
    SendReply(std::move(frames), std::string());  // counted as answered, nothing sent
    return;
  }
  queued_++;
  queued_bytes_ += size;
  std::string peer = frames.front().to_string();  // the routing id
  auto envelope = std::make_shared<std::vector<zmq::message_t>>(std::move(frames));
  auto answered = std::make_shared<std::atomic<bool>>(false);
  Reply reply = [this, envelope, answered](std::string reply_body) {
    if (answered->exchange(true)) return;  // exactly once, whatever a handler does
    loop_.Post([this, envelope, reply_body = std::move(reply_body)]() mutable {
      SendReply(std::move(*envelope), std::move(reply_body));
    });
  };
  workers_.Post([this, size, body = std::move(body), reply = std::move(reply),
                 peer = std::move(peer), received = std::chrono::steady_clock::now()]() mutable {
    queued_--;
    queued_bytes_ -= size;
    // A task boundary: one request's failure (bad_alloc, a library throwing) is answered and
    // logged here instead of ending the worker thread and the process.
    try {
      handler_(std::move(body), reply, received, std::move(peer));
    } catch (const std::exception& e) {
      handler_failures_++;
      spdlog::error("request handler failed: {}", e.what());
      reply(wire::Pack(wire::Value("Server-side exception handling payload")));
    } catch (...) {
      handler_failures_++;
      spdlog::error("request handler failed with a non-standard exception");
      reply(wire::Pack(wire::Value("Server-side exception handling payload")));
    }
  });
}

void RequestServer::SendReply(std::vector<zmq::message_t> envelope, std::string body) {
  HALITE_DCHECK(loop_.IsCurrentThread());
  replied_++;
  if (!router_ || body.empty()) return;  // empty: dropped on purpose (Handler)
  try {
    // The routing id decides: with ROUTER_MANDATORY it fails at once (EAGAIN) when that
    // connection already holds replies_queued_per_peer unread replies, and throws
    // (EHOSTUNREACH) when the peer is gone; the rest of the message then always goes.
    if (!router_->send(envelope.front(), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
      unread_dropped_++;
      if (auto n = unread_log_.Pass()) {
        spdlog::warn(
            "request server: dropped a reply to a connection that is not reading its replies "
            "({} queued){}",
            options_.replies_queued_per_peer, SuppressedSuffix(*n));
      }
    } else {
      for (std::size_t i = 1; i < envelope.size(); ++i) {
        router_->send(envelope[i], zmq::send_flags::sndmore);
      }
      router_->send(zmq::buffer(body), zmq::send_flags::dontwait);
    }
  } catch (const zmq::error_t& e) {
    // The peer went away (EHOSTUNREACH) or a real error.
    spdlog::debug("request server send: {}", e.what());
  }
  // Any operation on a ZeroMQ socket may take its edge-triggered readiness signal: the loop
  // must look again, or requests already here wait for the next wake-up.
  loop_.MarkDirty(watch_id_);
}

}  // namespace halite::master
