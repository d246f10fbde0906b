// What a stranger sends on the publish port (4505), as halite's own ZMTP server reads it:
// byte 0 is the size of the chunks the rest is fed in (0: all at once), as TCP may split it.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "halite/common/check.h"
#include "halite/transport/zmtp.h"

namespace zmtp = halite::transport::zmtp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t chunk = data[0] == 0 ? size : data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  zmtp::SubscriberLimits limits;
  limits.max_frame = 64;
  limits.max_messages = 8;
  zmtp::SubscriberStream stream(limits);
  std::vector<zmtp::SubscriberEvent> events;
  bool ready = false;
  std::size_t subscriptions = 0;
  while (!rest.empty()) {
    const std::string_view piece = rest.substr(0, chunk);
    rest.remove_prefix(piece.size());
    const std::size_t before = events.size();
    const bool ok = stream.Feed(piece, events).ok();
    for (std::size_t i = before; i < events.size(); ++i) {
      const auto& e = events[i];
      HALITE_CHECK(e.data.size() < limits.max_frame);
      if (e.kind == zmtp::SubscriberEvent::Kind::kReady) {
        HALITE_CHECK(!ready);
        ready = true;
      } else {
        HALITE_CHECK(ready);  // nothing but READY before the handshake is done
      }
      if (e.kind == zmtp::SubscriberEvent::Kind::kSubscribe ||
          e.kind == zmtp::SubscriberEvent::Kind::kCancel) {
        ++subscriptions;
      }
    }
    HALITE_CHECK(subscriptions <= limits.max_messages);
    if (!ok) break;  // the connection is closed
    HALITE_CHECK(stream.ready() == ready);
  }
  return 0;
}
