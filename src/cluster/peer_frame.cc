#include "halite/cluster/peer_frame.h"

#include "halite/wire/msgpack.h"

namespace halite::cluster {

namespace {

Result<std::uint64_t> GetU64(const wire::Value& map, std::string_view key) {
  const wire::Value* v = map.Find(key);
  if (v == nullptr) return Error::InvalidArgument("peer frame without '" + std::string(key) + "'");
  auto u = v->uint64();
  if (!u) return Error::InvalidArgument("peer frame '" + std::string(key) + "' is not a uint");
  return *u;
}

Result<std::string> GetStr(wire::Value& map, std::string_view key) {
  wire::Value* v = map.Find(key);
  std::string* s = v == nullptr ? nullptr : v->str();
  if (s == nullptr) {
    return Error::InvalidArgument("peer frame without string '" + std::string(key) + "'");
  }
  return std::move(*s);
}

// Absent means kEvent (frames of the single-stream channel).
Result<PeerClass> GetClass(const wire::Value& map) {
  const wire::Value* v = map.Find("cls");
  if (v == nullptr) return PeerClass::kEvent;
  auto u = v->uint64();
  if (!u || *u >= kPeerClassCount) return Error::InvalidArgument("peer frame 'cls' is unknown");
  return static_cast<PeerClass>(*u);
}

std::uint64_t ClassValue(PeerClass cls) { return static_cast<std::uint64_t>(cls); }

Result<wire::Value> UnpackMap(std::string_view bytes, std::size_t max_bytes) {
  wire::UnpackLimits limits;
  limits.max_depth = 4;
  limits.max_bytes = max_bytes;
  HALITE_ASSIGN_OR_RETURN(wire::Value value, wire::Unpack(bytes, limits));
  if (!value.is_map()) return Error::InvalidArgument("peer frame is not a map");
  return value;
}

}  // namespace

std::string EncodeDataFrame(std::uint64_t seq, std::uint64_t epoch, std::uint64_t low,
                            std::string_view kind, std::string_view payload, PeerClass cls) {
  wire::Value map = wire::Value::MapOf({{"seq", seq},
                                        {"epoch", epoch},
                                        {"low", low},
                                        {"kind", kind},
                                        {"payload", wire::Value::Bin(std::string(payload))},
                                        {"cls", ClassValue(cls)}});
  return wire::Pack(map, wire::Packing::kBinType);
}

std::string EncodeHeartbeatFrame(const HeartbeatFrame& frame) {
  wire::Value map = wire::Value::MapOf({{"hb", true},
                                        {"epoch", frame.epoch},
                                        {"low", frame.low},
                                        {"next", frame.next},
                                        {"cls", ClassValue(frame.cls)}});
  return wire::Pack(map, wire::Packing::kBinType);
}

std::string EncodeAckFrame(const AckFrame& frame) {
  wire::Value map = wire::Value::MapOf(
      {{"ack", frame.ack}, {"epoch", frame.epoch}, {"cls", ClassValue(frame.cls)}});
  if (frame.resend) map.Set("resend", true);
  return wire::Pack(map, wire::Packing::kBinType);
}

Result<SenderFrame> DecodeSenderFrame(std::string_view bytes, std::size_t max_bytes) {
  HALITE_ASSIGN_OR_RETURN(wire::Value map, UnpackMap(bytes, max_bytes));
  if (map.Find("seq") != nullptr) {
    DataFrame data;
    HALITE_ASSIGN_OR_RETURN(data.seq, GetU64(map, "seq"));
    HALITE_ASSIGN_OR_RETURN(data.epoch, GetU64(map, "epoch"));
    HALITE_ASSIGN_OR_RETURN(data.low, GetU64(map, "low"));
    HALITE_ASSIGN_OR_RETURN(data.kind, GetStr(map, "kind"));
    HALITE_ASSIGN_OR_RETURN(data.payload, GetStr(map, "payload"));
    HALITE_ASSIGN_OR_RETURN(data.cls, GetClass(map));
    if (data.seq == 0 || data.epoch == 0 || data.low == 0 || data.low > data.seq) {
      return Error::InvalidArgument("peer data frame with inconsistent seq/low/epoch");
    }
    return SenderFrame(std::move(data));
  }
  if (map.Find("hb") != nullptr) {
    HeartbeatFrame hb;
    HALITE_ASSIGN_OR_RETURN(hb.epoch, GetU64(map, "epoch"));
    HALITE_ASSIGN_OR_RETURN(hb.low, GetU64(map, "low"));
    HALITE_ASSIGN_OR_RETURN(hb.next, GetU64(map, "next"));
    HALITE_ASSIGN_OR_RETURN(hb.cls, GetClass(map));
    if (hb.epoch == 0 || hb.low == 0 || hb.low > hb.next) {
      return Error::InvalidArgument("peer heartbeat with inconsistent low/next/epoch");
    }
    return SenderFrame(hb);
  }
  return Error::InvalidArgument("peer frame is neither data nor heartbeat");
}

Result<AckFrame> DecodeAckFrame(std::string_view bytes) {
  HALITE_ASSIGN_OR_RETURN(wire::Value map, UnpackMap(bytes, 4096));
  AckFrame ack;
  HALITE_ASSIGN_OR_RETURN(ack.ack, GetU64(map, "ack"));
  HALITE_ASSIGN_OR_RETURN(ack.epoch, GetU64(map, "epoch"));
  HALITE_ASSIGN_OR_RETURN(ack.cls, GetClass(map));
  if (const wire::Value* resend = map.Find("resend")) ack.resend = resend->Truthy();
  return ack;
}

}  // namespace halite::cluster
