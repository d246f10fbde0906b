// Peer channel frames: DecodeSenderFrame and DecodeAckFrame on arbitrary bytes. A frame that
// decodes must encode back to bytes that decode to the same frame.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "halite/cluster/peer_frame.h"
#include "halite/common/check.h"

namespace cluster = halite::cluster;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  auto sender = cluster::DecodeSenderFrame(bytes, 1 << 20);
  if (sender.ok()) {
    if (const auto* d = std::get_if<cluster::DataFrame>(&*sender)) {
      auto again = cluster::DecodeSenderFrame(
          cluster::EncodeDataFrame(d->seq, d->epoch, d->low, d->kind, d->payload), 1 << 20);
      HALITE_CHECK(again.ok()) << again.error().message;
      const auto* a = std::get_if<cluster::DataFrame>(&*again);
      HALITE_CHECK(a != nullptr && a->seq == d->seq && a->epoch == d->epoch && a->low == d->low &&
                   a->kind == d->kind && a->payload == d->payload)
          << "data frame changed on re-encoding";
    } else {
      const auto& h = std::get<cluster::HeartbeatFrame>(*sender);
      auto again = cluster::DecodeSenderFrame(cluster::EncodeHeartbeatFrame(h), 1 << 20);
      HALITE_CHECK(again.ok()) << again.error().message;
      const auto* a = std::get_if<cluster::HeartbeatFrame>(&*again);
      HALITE_CHECK(a != nullptr && a->epoch == h.epoch && a->low == h.low && a->next == h.next)
          << "heartbeat changed on re-encoding";
    }
  }
  (void)cluster::DecodeSenderFrame(bytes, 64);  // the size bound itself

  auto ack = cluster::DecodeAckFrame(bytes);
  if (ack.ok()) {
    auto again = cluster::DecodeAckFrame(cluster::EncodeAckFrame(*ack));
    HALITE_CHECK(again.ok() && again->ack == ack->ack && again->epoch == ack->epoch &&
                 again->resend == ack->resend)
        << "ack changed on re-encoding";
  }
  return 0;
}
