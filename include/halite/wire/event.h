// Salt event packing (salt-wire.md 8.2) and the IPC frame around it (8.1, 10.5).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::wire {

struct Event {
  std::string tag;
  Value data;  // a map
};

// The longest tag halite accepts from outside (minions, peers). Salt's own tags are far shorter:
// salt/job/<20-digit jid>/ret/<255-byte id> is under 300 bytes.
inline constexpr std::size_t kMaxEventTagBytes = 1024;

// A tag that can be packed and read back as itself: not empty, at most kMaxEventTagBytes, and
// no control byte (0x00-0x1f, 0x7f), so no "\n\n" can end it early and smuggle a second tag
// and data past a check made on the whole string.
bool ValidEventTag(std::string_view tag);

// tag || "\n\n" || msgpack-bin(data). `data` is packed as given (add _stamp first if wanted).
std::string PackEvent(std::string_view tag, const Value& data);
// Splits at the first "\n\n"; the data must decode to a map.
Result<Event> UnpackEvent(std::string_view packed);

// {"head": {}, "body": <packed as bin>} in the bin-type packing: what Salt writes on its
// event sockets and the cluster pool.
std::string FrameEvent(std::string_view packed);
// Inverse of FrameEvent for one already-split document.
Result<std::string> UnframeEvent(const Value& frame);

// Salt's max_event_size trimming (salt.utils.dicttrim.trim_dict, what SaltEvent.fire_event does
// to every event on the master bus): when `data` packs to more than `max_bytes`, its values
// (a map's own values, recursively) that pack to more than half of `max_bytes` become the
// string "VALUE_TRIMMED", then those over 40 %, 30 %, 20 % and 10 %, until it packs to less.
// Salt measures a value with sys.getsizeof, which leaves out a list's items; here a value's
// size is its packed size, so a list of large items is trimmed too. kTooLarge: still over
// after the last pass (or not a map), and the caller drops the event; Salt would fire it.
enum class EventTrim { kFits, kTrimmed, kTooLarge };
EventTrim TrimEventData(Value& data, std::size_t max_bytes);
inline constexpr std::string_view kValueTrimmed = "VALUE_TRIMMED";

// datetime.utcnow().isoformat(): "2025-01-01T12:00:00.123456".
std::string IsoStamp(std::chrono::system_clock::time_point t = std::chrono::system_clock::now());

// Adds (or replaces) `_stamp` as the last key of a map.
void AddStamp(Value& data,
              std::chrono::system_clock::time_point t = std::chrono::system_clock::now());

}  // namespace halite::wire
