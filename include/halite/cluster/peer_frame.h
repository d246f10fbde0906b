// The frames of the peer channel. Each is one ZeroMQ frame holding one msgpack map
// (Packing::kBinType; integers unsigned 64-bit).
//
// Sender (DEALER) -> receiver (ROUTER):
//   data       {seq, epoch, low, kind, payload, cls}   payload is bin, kind is str
//   heartbeat  {hb: true, epoch, low, next, cls}
// Receiver (ROUTER) -> sender (DEALER), on the connection the frame came in on:
//   ack        {ack, epoch, cls[, resend: true]}
//
// `cls` names one of two independent streams between a sender and a receiver (PeerClass: 0
// events, 1 publishes; absent means 0). Everything below holds per stream: each has its own
// seq space, low, next and cumulative acks, so a gap or an overflow in one never touches the
// other. Both ends are halite; there is no other implementation to stay compatible with.
// `epoch` is the sender's process epoch (random, non-zero, fixed for the life of a channel);
// `seq` numbers the sender's messages of one class to this one receiver, from 1. `low` is the
// oldest seq the sender still holds: everything below it was acknowledged or dropped on overflow,
// so a receiver that has not seen this epoch yet, or that is behind `low`, starts there. `next` is
// the seq the sender will send next (so `next - 1` was sent already). An ack says "I delivered
// every seq <= ack of your epoch"; `resend` asks the sender to go back to ack + 1 because the
// receiver saw a gap.
//
// Decoding never trusts the input: malformed bytes are InvalidArgument, never a crash.
// Thread-safety: plain functions on values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "halite/common/result.h"

namespace halite::cluster {

// The stream a message travels in. Events are lossy (a full backlog drops its oldest);
// publishes are lossless (a full queue refuses new ones at Broadcast). Values are the wire's.
enum class PeerClass : std::uint8_t { kEvent = 0, kPublish = 1 };
inline constexpr std::size_t kPeerClassCount = 2;

struct DataFrame {
  std::uint64_t seq = 0;
  std::uint64_t epoch = 0;
  std::uint64_t low = 0;
  std::string kind;
  std::string payload;
  PeerClass cls = PeerClass::kEvent;
};

struct HeartbeatFrame {
  std::uint64_t epoch = 0;
  std::uint64_t low = 0;
  std::uint64_t next = 0;
  PeerClass cls = PeerClass::kEvent;
};

struct AckFrame {
  std::uint64_t ack = 0;
  std::uint64_t epoch = 0;
  bool resend = false;
  PeerClass cls = PeerClass::kEvent;
};

using SenderFrame = std::variant<DataFrame, HeartbeatFrame>;

std::string EncodeDataFrame(std::uint64_t seq, std::uint64_t epoch, std::uint64_t low,
                            std::string_view kind, std::string_view payload,
                            PeerClass cls = PeerClass::kEvent);
std::string EncodeHeartbeatFrame(const HeartbeatFrame& frame);
std::string EncodeAckFrame(const AckFrame& frame);

// Frames a receiver accepts: data or heartbeat. `max_bytes` bounds the input.
Result<SenderFrame> DecodeSenderFrame(std::string_view bytes, std::size_t max_bytes);
Result<AckFrame> DecodeAckFrame(std::string_view bytes);

}  // namespace halite::cluster
