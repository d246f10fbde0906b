#include "halite/minion/request_channel.h"

#include <spdlog/spdlog.h>

#include <random>
#include <vector>

namespace halite::minion {

namespace {

std::minstd_rand& Rng() {
  thread_local std::minstd_rand rng(std::random_device{}());
  return rng;
}

}  // namespace

RequestChannel::RequestChannel(transport::ZmqLoop& loop, zmq::context_t& context, Options options)
    : loop_(loop), context_(context), options_(std::move(options)) {}

RequestChannel::~RequestChannel() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  alive_.reset();
  CancelTimer(try_timer_);
  CancelTimer(idle_timer_);
  CloseSocket();
}

void RequestChannel::CancelTimer(transport::ZmqLoop::TimerId& id) {
  if (id != 0) loop_.CancelTimer(id);
  id = 0;
}

void RequestChannel::Send(Request request, bool urgent) {
  HALITE_DCHECK(loop_.IsCurrentThread());
  if (request.tries < 1) request.tries = 1;
  if (urgent) {
    queue_.push_front(std::move(request));
  } else {
    queue_.push_back(std::move(request));
  }
  Pump();
}

std::chrono::milliseconds RequestChannel::TryTimeout() const {
  auto lo = current_.timeout;
  auto hi = current_.timeout_max;
  if (hi <= lo) return lo;
  std::uniform_int_distribution<std::int64_t> pick(lo.count(), hi.count());
  return std::chrono::milliseconds(pick(Rng()));
}

void RequestChannel::Pump() {
  if (in_flight_ || queue_.empty()) return;
  CancelTimer(idle_timer_);
  current_ = std::move(queue_.front());
  queue_.pop_front();
  in_flight_ = true;
  tries_left_ = current_.tries;
  Transmit();
}

bool RequestChannel::OpenSocket() {
  try {
    auto socket = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
    socket->set(zmq::sockopt::linger, 0);
    socket->set(zmq::sockopt::reconnect_ivl_max, 5000);
    socket->set(zmq::sockopt::tcp_keepalive, 1);
    socket->set(zmq::sockopt::tcp_keepalive_idle, 300);
    if (options_.ipv6) socket->set(zmq::sockopt::ipv6, 1);
    socket->connect(options_.endpoint);
    socket_ = std::move(socket);
  } catch (const zmq::error_t& e) {
    spdlog::warn("request socket to {}: {}", options_.endpoint, e.what());
    socket_.reset();
    return false;
  }
  watch_ = loop_.Watch(*socket_, [this] { OnReadable(); });
  return true;
}

void RequestChannel::CloseSocket() {
  if (!socket_) return;
  loop_.Unwatch(watch_);
  watch_ = 0;
  try {
    socket_->close();
  } catch (const zmq::error_t&) {
  }
  socket_.reset();
}

void RequestChannel::Transmit() {
  CancelTimer(try_timer_);
  bool sent = false;
  if (socket_ || OpenSocket()) {
    try {
      sent = socket_->send(zmq::message_t(), zmq::send_flags::sndmore | zmq::send_flags::dontwait)
                 .has_value() &&
             socket_->send(zmq::buffer(current_.body), zmq::send_flags::dontwait).has_value();
    } catch (const zmq::error_t& e) {
      spdlog::warn("request to {}: send failed: {}", options_.endpoint, e.what());
    }
    if (socket_) loop_.MarkDirty(watch_);
  }
  if (!sent) {
    // A half-sent message would corrupt the framing of the next one: start over.
    CloseSocket();
  }
  std::weak_ptr<int> alive = alive_;
  try_timer_ = loop_.RunAfter(TryTimeout(), [this, alive] {
    if (alive.expired()) return;
    try_timer_ = 0;
    OnTryFailed();
  });
}

void RequestChannel::OnTryFailed() {
  ++timeouts_;
  if (options_.timeout_counter != nullptr) {
    options_.timeout_counter->fetch_add(1, std::memory_order_relaxed);
  }
  // Salt's RequestClient: a timed-out socket is closed so a late reply cannot be mistaken for
  // the answer to the next request.
  CloseSocket();
  if (--tries_left_ > 0) {
    Transmit();
    return;
  }
  Finish(Error::DeadlineExceeded("no reply from " + options_.endpoint + " after " +
                                 std::to_string(current_.tries) + " tries"));
}

void RequestChannel::OnReadable() {
  std::vector<zmq::message_t> frames;
  try {
    for (;;) {
      zmq::message_t frame;
      if (!socket_->recv(frame, zmq::recv_flags::dontwait)) break;
      bool more = frame.more();
      frames.push_back(std::move(frame));
      if (!more) break;
    }
  } catch (const zmq::error_t& e) {
    spdlog::warn("request socket to {}: recv failed: {}", options_.endpoint, e.what());
    return;
  }
  if (frames.empty()) return;
  if (!in_flight_) return;  // nothing asked: a stray reply
  Finish(frames.back().to_string());
}

void RequestChannel::Finish(Result<std::string> result) {
  CancelTimer(try_timer_);
  in_flight_ = false;
  Callback done = std::move(current_.done);
  current_ = Request{};
  std::weak_ptr<int> alive = alive_;
  if (done) done(std::move(result));
  if (alive.expired()) return;  // the callback destroyed this channel
  Pump();
  ArmIdleTimer();
}

void RequestChannel::ArmIdleTimer() {
  if (options_.idle_close.count() <= 0 || in_flight_ || !queue_.empty() || !socket_) return;
  CancelTimer(idle_timer_);
  std::weak_ptr<int> alive = alive_;
  idle_timer_ = loop_.RunAfter(options_.idle_close, [this, alive] {
    if (alive.expired()) return;
    idle_timer_ = 0;
    if (!in_flight_ && queue_.empty()) CloseSocket();
  });
}

}  // namespace halite::minion
