// PeerChannel on the loop thread: the per-peer, per-class streams (see peer_channel_impl.h).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "peer_channel_impl.h"

namespace halite::cluster {

using namespace peer_internal;

// ---- sending ----------------------------------------------------------------------------

void PeerChannel::Impl::DrainInbox() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  std::vector<Incoming> batch;
  {
    std::lock_guard lock(inbox_mu_);
    batch.swap(inbox_);
  }
  Deliver(batch);
}

void PeerChannel::Impl::Deliver(std::vector<Incoming>& batch) {
  if (closed_) return;
  for (Incoming& incoming : batch) {
    auto shared = std::make_shared<const PeerMessage>(std::move(incoming.message));
    for (std::size_t i = 0; i < links_.size(); ++i) {
      if (links_[i].removed) {
        // BroadcastPublish reserved room for every link, this one included.
        if (incoming.cls == PeerClass::kPublish) ReleasePublishes(i, 1);
        continue;
      }
      Enqueue(i, incoming.cls, shared, incoming.queued);
    }
  }
  for (std::size_t i = 0; i < links_.size(); ++i) {
    if (links_[i].removed) continue;
    Pump(i);
    PublishLink(i);
  }
}

void PeerChannel::Impl::Enqueue(std::size_t i, PeerClass cls,
                                const std::shared_ptr<const PeerMessage>& message,
                                Clock::time_point queued) {
  Link& link = links_[i];
  OutStream& stream = link.out[Index(cls)];
  stream.Push(Pending{stream.next_seq++, message, queued});
  // Publishes had their room reserved by BroadcastPublish: their queue never overflows.
  if (cls == PeerClass::kPublish) return;
  // Events are bounded by count and by bytes: a minion's large returns, fired as events,
  // would otherwise pile up for a peer that is down (the newest one always stays).
  std::uint64_t dropped = 0;
  while (stream.queue.size() > options_.event_backlog_max ||
         (stream.bytes > options_.event_backlog_max_bytes && stream.queue.size() > 1)) {
    stream.PopFront();
    ++dropped;
  }
  if (dropped == 0) return;
  stream.send_next = std::max(stream.send_next, stream.low());
  if (stream.burst_drops == 0) {
    spdlog::warn(
        "peer {}: event backlog full ({} events or {} bytes); dropping the oldest until it "
        "catches up (publishes are queued apart and are not affected)",
        link.id, options_.event_backlog_max, options_.event_backlog_max_bytes);
  }
  stream.burst_drops += dropped;
  stream.dropped_since_tick = true;
  std::lock_guard lock(stats_mu_);
  stats_[i].events.dropped += dropped;
}

void PeerChannel::Impl::ExpirePublishes(std::size_t i, Clock::time_point now) {
  if (options_.publish_max_age.count() <= 0) return;
  Link& link = links_[i];
  OutStream& stream = link.out[Index(PeerClass::kPublish)];
  std::size_t expired = 0;
  while (!stream.queue.empty() && now - stream.queue.front().queued > options_.publish_max_age) {
    stream.PopFront();
    ++expired;
  }
  if (expired == 0) return;
  stream.send_next = std::max(stream.send_next, stream.low());
  spdlog::warn(
      "peer {}: {} publishes were not acknowledged within {} s and are given up (the peer would "
      "refuse them as stale)",
      link.id, expired, options_.publish_max_age.count());
  {
    std::lock_guard lock(stats_mu_);
    stats_[i].publishes.dropped += expired;
    stats_[i].publishes.queued = stream.queue.size();
  }
  ReleasePublishes(i, expired);
  PublishLink(i);
}

void PeerChannel::Impl::ReleasePublishes(std::size_t i, std::size_t n) {
  std::lock_guard lock(inbox_mu_);
  HALITE_DCHECK(publish_held_[i] >= n);
  publish_held_[i] -= std::min(publish_held_[i], n);
}

void PeerChannel::Impl::Pump(std::size_t i) {
  Link& link = links_[i];
  // Data goes out only on a link the peer answers; until then heartbeats probe it, and the
  // first answer rewinds to the oldest unacknowledged message.
  if (link.dealer == nullptr || !link.connected) return;
  bool sent_any = false;
  try {
    for (PeerClass cls : kClassesBySendPriority) {
      OutStream& stream = link.out[Index(cls)];
      const std::uint64_t low = stream.low();
      bool blocked = false;
      while (stream.send_next < stream.next_seq) {
        const Pending& pending = stream.queue[stream.send_next - low];
        std::string frame = EncodeDataFrame(pending.seq, epoch_, low, pending.message->kind,
                                            pending.message->payload, cls);
        if (!link.dealer->send(zmq::buffer(frame), zmq::send_flags::dontwait)) {
          ScheduleRetry(i);  // EAGAIN: high-water mark, or no connection
          blocked = true;
          break;
        }
        ++stream.send_next;
        sent_any = true;
      }
      if (blocked) break;
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

void PeerChannel::Impl::LogDropBursts(std::size_t i) {
  OutStream& stream = links_[i].out[Index(PeerClass::kEvent)];
  if (stream.burst_drops > 0 && !stream.dropped_since_tick) {
    std::uint64_t total;
    {
      std::lock_guard lock(stats_mu_);
      total = stats_[i].events.dropped;
    }
    spdlog::warn("peer {}: event backlog overflow over: {} events dropped ({} in total)",
                 links_[i].id, stream.burst_drops, total);
    stream.burst_drops = 0;
  }
  stream.dropped_since_tick = false;
}

void PeerChannel::Impl::OnHeartbeatTick() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  const auto now = Clock::now();
  for (std::size_t i = 0; i < links_.size(); ++i) {
    Link& link = links_[i];
    if (link.removed) continue;
    LogDropBursts(i);
    ExpirePublishes(i, now);
    if (link.dealer == nullptr) {
      PublishLink(i);
      continue;
    }
    if (link.connected && (!link.last_reply || now - *link.last_reply > options_.link_timeout)) {
      link.connected = false;
      spdlog::warn("peer {} ({}) is down: no reply for {} ms; {} messages wait for it", link.id,
                   link.endpoint, options_.link_timeout.count(), link.queued());
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
    try {
      for (PeerClass cls : kClassesBySendPriority) {
        const OutStream& stream = link.out[Index(cls)];
        HeartbeatFrame hb{epoch_, stream.low(), stream.send_next, cls};
        (void)link.dealer->send(zmq::buffer(EncodeHeartbeatFrame(hb)), zmq::send_flags::dontwait);
      }
    } catch (const zmq::error_t& e) {
      spdlog::error("peer {}: heartbeat send failed: {}", link.id, e.what());
    }
    loop_.MarkDirty(link.watch);
    Pump(i);
    PublishLink(i);
  }
}

// ---- our links' replies -----------------------------------------------------------------

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
    link.Rewind();
    spdlog::info("peer {} ({}) is up; {} messages to send", link.id, link.endpoint, link.queued());
  }
  if (ack.epoch != epoch_) return;  // about an earlier run of this process
  OutStream& stream = link.out[Index(ack.cls)];
  std::uint64_t acked = 0;
  while (!stream.queue.empty() && stream.queue.front().seq <= ack.ack) {
    stream.PopFront();
    ++acked;
  }
  if (acked > 0) {
    {
      std::lock_guard lock(stats_mu_);
      PeerLinkStatus& status = stats_[i];
      (ack.cls == PeerClass::kPublish ? status.publishes : status.events).sent += acked;
    }
    if (ack.cls == PeerClass::kPublish) ReleasePublishes(i, acked);
  }
  stream.send_next = std::max(stream.send_next, stream.low());
  if (ack.resend && ack.ack + 1 < stream.send_next) {
    stream.send_next = std::max(ack.ack + 1, stream.low());
  }
}

// ---- receiving --------------------------------------------------------------------------

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
      if (it == index_by_id_.end() || links_[it->second].removed) continue;
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

bool PeerChannel::Impl::FollowEpoch(std::size_t i, PeerClass cls, std::uint64_t epoch,
                                    std::uint64_t low) {
  InStream& in = inbound_[i].in[Index(cls)];
  if (in.epoch == epoch) {
    if (low > in.expected) in.expected = low;  // the sender gave those up (overflow, age)
    return true;
  }
  if (std::find(in.retired.begin(), in.retired.end(), epoch) != in.retired.end()) return false;
  if (in.epoch != 0) {
    spdlog::info("peer {} restarted (new sender epoch for its {}s)", links_[i].id, ClassName(cls));
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
  const PeerClass cls = data.cls;
  if (!FollowEpoch(i, cls, data.epoch, data.low)) return;
  InStream& in = inbound_[i].in[Index(cls)];
  if (data.seq < in.expected) {
    ++in.unacked;  // a duplicate: make sure the sender hears we have it
    return;
  }
  if (data.seq > in.expected) {
    RequestResend(i, cls);
    return;
  }
  ++in.expected;
  ++in.unacked;
  {
    std::lock_guard lock(stats_mu_);
    PeerLinkStatus& status = stats_[i];
    ++(cls == PeerClass::kPublish ? status.publishes : status.events).received;
  }
  if (handler_) handler_(links_[i].id, PeerMessage{std::move(data.kind), std::move(data.payload)});
  if (in.unacked >= kAckEvery) SendAck(i, cls, false);
}

void PeerChannel::Impl::OnHeartbeat(std::size_t i, const HeartbeatFrame& hb) {
  if (!FollowEpoch(i, hb.cls, hb.epoch, hb.low)) return;
  InStream& in = inbound_[i].in[Index(hb.cls)];
  // Frames on one connection arrive in order, so anything sent before this heartbeat and
  // still missing was lost with an earlier connection.
  bool missing = in.expected < hb.next;
  if (missing) {
    in.nacked = in.expected;
    in.nack_time = Clock::now();
  }
  SendAck(i, hb.cls, missing);  // also the heartbeat's answer, which keeps the sender's link up
}

void PeerChannel::Impl::RequestResend(std::size_t i, PeerClass cls) {
  InStream& in = inbound_[i].in[Index(cls)];
  auto now = Clock::now();
  // Every frame after a gap lands here; ask once per gap (again after a heartbeat interval).
  if (in.nacked == in.expected && now - in.nack_time < options_.heartbeat_interval) return;
  in.nacked = in.expected;
  in.nack_time = now;
  SendAck(i, cls, true);
}

void PeerChannel::Impl::SendAck(std::size_t i, PeerClass cls, bool resend) {
  Inbound& inbound = inbound_[i];
  InStream& in = inbound.in[Index(cls)];
  if (router_ == nullptr || inbound.routing_id.empty() || in.epoch == 0) return;
  std::string frame = EncodeAckFrame(AckFrame{in.expected - 1, in.epoch, resend, cls});
  try {
    // A full pipe drops the ack; the next cumulative one covers it.
    if (router_->send(zmq::buffer(inbound.routing_id),
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
    for (PeerClass cls : kClassesBySendPriority) {
      if (inbound_[i].in[Index(cls)].unacked > 0) SendAck(i, cls, false);
    }
  }
}

void PeerChannel::Impl::SendFinalAcks() { OnAckTick(); }

}  // namespace halite::cluster
