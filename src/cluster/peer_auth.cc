// PeerChannel on the loop thread: who may connect. The ZAP handler admits only configured
// peers' CURVE keys and names the peer; the monitor counts and logs refused handshakes.
#include <spdlog/spdlog.h>
#include <zmq.h>

#include <cstring>

#include "peer_channel_impl.h"

namespace halite::cluster {

using namespace peer_internal;

namespace {

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

}  // namespace

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

}  // namespace halite::cluster
