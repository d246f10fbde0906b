#include "halite/wire/event.h"

#include <ctime>

namespace halite::wire {

bool ValidEventTag(std::string_view tag) {
  if (tag.empty() || tag.size() > kMaxEventTagBytes) return false;
  for (unsigned char c : tag) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

std::string PackEvent(std::string_view tag, const Value& data) {
  std::string out;
  out.reserve(tag.size() + 64);
  out.append(tag);
  out.append("\n\n");
  PackTo(data, Packing::kBinType, out);
  return out;
}

Result<Event> UnpackEvent(std::string_view packed) {
  std::size_t sep = packed.find("\n\n");
  if (sep == std::string_view::npos) return Error::InvalidArgument("event: no tag separator");
  HALITE_ASSIGN_OR_RETURN(Value data, Unpack(packed.substr(sep + 2)));
  if (!data.is_map()) return Error::InvalidArgument("event: data is not a map");
  return Event{std::string(packed.substr(0, sep)), std::move(data)};
}

std::string FrameEvent(std::string_view packed) {
  Value frame =
      Value::MapOf({{"head", Value::EmptyMap()}, {"body", Value::Bin(std::string(packed))}});
  return Pack(frame, Packing::kBinType);
}

Result<std::string> UnframeEvent(const Value& frame) {
  const std::string* body = frame.FindStr("body");
  if (!body) return Error::InvalidArgument("event frame without a body");
  return *body;
}

std::string IsoStamp(std::chrono::system_clock::time_point t) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[48];
  std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%06lld",
                static_cast<long long>(us % 1000000));  // NOLINT
  return buf;
}

void AddStamp(Value& data, std::chrono::system_clock::time_point t) {
  data.Erase("_stamp");
  data.Set("_stamp", IsoStamp(t));
}

namespace {

void TrimValuesOver(Value& map, std::size_t threshold) {
  for (auto& [key, value] : *map.map()) {
    if (value.is_map()) {
      TrimValuesOver(value, threshold);
    } else if (Pack(value).size() > threshold) {
      value = Value(kValueTrimmed);
    }
  }
}

}  // namespace

EventTrim TrimEventData(Value& data, std::size_t max_bytes) {
  if (Pack(data).size() <= max_bytes) return EventTrim::kFits;
  if (!data.is_map()) return EventTrim::kTooLarge;
  for (int percent = 50; percent > 0; percent -= 10) {
    TrimValuesOver(data, max_bytes * static_cast<std::size_t>(percent) / 100);
    if (Pack(data).size() < max_bytes) return EventTrim::kTrimmed;
  }
  return EventTrim::kTooLarge;
}

}  // namespace halite::wire
