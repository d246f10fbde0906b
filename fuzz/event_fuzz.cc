// Event unpacking: UnpackEvent on arbitrary bytes (tag "\n\n" msgpack map), and the IPC frame
// around it ({head, body}) through Unpack + UnframeEvent. An event that unpacks must pack back
// to an event with the same tag and data. Its data is then trimmed to a small max_event_size
// (TrimEventData), which must leave it within the limit or say it is too large.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "halite/common/check.h"
#include "halite/wire/event.h"
#include "halite/wire/msgpack.h"

namespace wire = halite::wire;

namespace {

void CheckEvent(std::string_view packed) {
  auto event = wire::UnpackEvent(packed);
  if (!event.ok()) return;
  HALITE_CHECK(event->tag.find("\n\n") == std::string::npos) << "tag holds the separator";
  auto again = wire::UnpackEvent(wire::PackEvent(event->tag, event->data));
  HALITE_CHECK(again.ok()) << "a packed event does not unpack: " << again.error().message;
  HALITE_CHECK(again->tag == event->tag) << "tag changed";
  HALITE_CHECK(wire::Pack(again->data, wire::Packing::kBinType) ==
               wire::Pack(event->data, wire::Packing::kBinType))
      << "data changed";
  wire::AddStamp(event->data);
  // A limit the fuzzer's inputs (up to 16 KiB) can exceed.
  constexpr std::size_t kMax = 256;
  const wire::EventTrim trim = wire::TrimEventData(event->data, kMax);
  const std::size_t trimmed = wire::Pack(event->data).size();
  HALITE_CHECK(trim == wire::EventTrim::kTooLarge || trimmed <= kMax)
      << "trimmed data still " << trimmed << " bytes";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckEvent(bytes);
  auto frame = wire::Unpack(bytes);
  if (frame.ok()) {
    auto body = wire::UnframeEvent(*frame);
    if (body.ok()) CheckEvent(*body);
  }
  return 0;
}
