#include "halite/transport/zmtp.h"

#include <cstdint>

#include "halite/common/logging.h"

namespace halite::transport::zmtp {
namespace {

constexpr unsigned char kMore = 0x01;
constexpr unsigned char kLong = 0x02;
constexpr unsigned char kCommand = 0x04;
constexpr std::size_t kMechanismOffset = 12;
constexpr std::size_t kMechanismSize = 20;

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::uint32_t BigEndian32(std::string_view s) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

std::string Command(std::string_view name, std::string_view data) {
  std::string body(1, static_cast<char>(name.size()));
  body.append(name);
  body.append(data);
  std::string out(1, static_cast<char>(kCommand));
  out.push_back(static_cast<char>(body.size()));  // every command we send is short
  out.append(body);
  return out;
}

// The Socket-Type property of a READY command's metadata, or an error.
Result<std::string_view> SocketType(std::string_view metadata) {
  while (!metadata.empty()) {
    const std::size_t name_size = static_cast<unsigned char>(metadata[0]);
    if (metadata.size() < 1 + name_size + 4) return Error::InvalidArgument("truncated READY");
    const std::string_view name = metadata.substr(1, name_size);
    const std::uint32_t value_size = BigEndian32(metadata.substr(1 + name_size, 4));
    metadata.remove_prefix(1 + name_size + 4);
    if (metadata.size() < value_size) return Error::InvalidArgument("truncated READY");
    const std::string_view value = metadata.substr(0, value_size);
    metadata.remove_prefix(value_size);
    if (EqualsIgnoringCase(name, "Socket-Type")) return value;
  }
  return Error::InvalidArgument("READY without a Socket-Type");
}

}  // namespace

std::string PubGreeting() {
  std::string g(kGreetingSize, '\0');
  g[0] = static_cast<char>(0xff);
  g[9] = 0x7f;
  g[10] = 3;  // major
  g[11] = 0;  // minor: 3.0
  g.replace(kMechanismOffset, 4, "NULL");
  return g;
}

std::string ReadyCommand(std::string_view socket_type) {
  std::string metadata(1, static_cast<char>(11));
  metadata.append("Socket-Type");
  const auto n = static_cast<std::uint32_t>(socket_type.size());
  for (int shift = 24; shift >= 0; shift -= 8) metadata.push_back(static_cast<char>(n >> shift));
  metadata.append(socket_type);
  return Command("READY", metadata);
}

std::string MessageHeader(std::size_t size) {
  if (size <= 255) return std::string{static_cast<char>(0), static_cast<char>(size)};
  std::string h(1, static_cast<char>(kLong));
  const auto n = static_cast<std::uint64_t>(size);
  for (int shift = 56; shift >= 0; shift -= 8) h.push_back(static_cast<char>(n >> shift));
  return h;
}

std::string Pong(std::string_view context) { return Command("PONG", context); }

Status SubscriberStream::Feed(std::string_view bytes, std::vector<SubscriberEvent>& out) {
  buffer_.append(bytes);
  std::string_view rest = buffer_;
  Status status = OkStatus();
  for (;;) {
    if (state_ == State::kGreeting) {
      if (rest.size() < kGreetingSize) break;
      status = OnGreeting(rest.substr(0, kGreetingSize));
      rest.remove_prefix(kGreetingSize);
      if (!status.ok()) break;
      state_ = State::kReady;
      continue;
    }
    if (rest.size() < 2) break;
    const auto flags = static_cast<unsigned char>(rest[0]);
    if ((flags & ~(kMore | kLong | kCommand)) != 0) {
      status = Error::InvalidArgument("reserved frame flags set");
      break;
    }
    std::size_t header = 2;
    std::uint64_t size = static_cast<unsigned char>(rest[1]);
    if ((flags & kLong) != 0) {
      header = 9;
      if (rest.size() < header) break;
      size = 0;
      for (std::size_t i = 1; i < 9; ++i) size = (size << 8) | static_cast<unsigned char>(rest[i]);
    }
    if (size > limits_.max_frame) {
      status = Error::ResourceExhausted("a frame of " + std::to_string(size) +
                                        " bytes (a subscriber's are at most " +
                                        std::to_string(limits_.max_frame) + ")");
      break;
    }
    if (rest.size() < header + size) break;
    status = OnFrame(flags, rest.substr(header, size), out);
    rest.remove_prefix(header + size);
    if (!status.ok()) break;
  }
  if (!status.ok()) {
    buffer_.clear();
    return status;
  }
  buffer_.erase(0, buffer_.size() - rest.size());
  return OkStatus();
}

Status SubscriberStream::OnGreeting(std::string_view g) {
  if (static_cast<unsigned char>(g[0]) != 0xff || (g[9] & 0x01) == 0) {
    return Error::InvalidArgument("not a ZMTP greeting");
  }
  if (g[10] < 3) {
    return Error::InvalidArgument("ZMTP " + std::to_string(static_cast<int>(g[10])) +
                                  ".x peer (3.0 or later needed)");
  }
  const std::string_view mechanism = g.substr(kMechanismOffset, kMechanismSize);
  if (mechanism != std::string_view("NULL\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", kMechanismSize)) {
    return Error::InvalidArgument("mechanism " + Printable(mechanism) +
                                  " (the publish port speaks NULL)");
  }
  return OkStatus();
}

Status SubscriberStream::OnFrame(unsigned char flags, std::string_view body,
                                 std::vector<SubscriberEvent>& out) {
  if ((flags & kCommand) != 0) {
    if ((flags & kMore) != 0) return Error::InvalidArgument("a command with more frames");
    if (body.empty() || body.size() < 1u + static_cast<unsigned char>(body[0])) {
      return Error::InvalidArgument("truncated command");
    }
    const std::string_view name = body.substr(1, static_cast<unsigned char>(body[0]));
    const std::string_view data = body.substr(1 + name.size());
    if (state_ == State::kReady) {
      if (name != "READY") {
        return Error::InvalidArgument("expected READY, got " + Printable(name));
      }
      auto type = SocketType(data);
      if (!type.ok()) return type.error();
      if (*type != "SUB" && *type != "XSUB") {
        return Error::InvalidArgument("a " + Printable(*type) + " socket (publishes go to SUB)");
      }
      state_ = State::kOpen;
      out.push_back({SubscriberEvent::Kind::kReady, {}});
      return OkStatus();
    }
    if (name == "PING") {
      if (data.size() < 2 || data.size() > 2 + 16) return Error::InvalidArgument("bad PING");
      out.push_back({SubscriberEvent::Kind::kPing, std::string(data.substr(2))});
      return OkStatus();
    }
    if (name == "PONG") return OkStatus();
    if (name == "SUBSCRIBE" || name == "CANCEL") {
      if (++messages_ > limits_.max_messages) {
        return Error::ResourceExhausted("more than " + std::to_string(limits_.max_messages) +
                                        " subscriptions");
      }
      out.push_back(
          {name == "SUBSCRIBE" ? SubscriberEvent::Kind::kSubscribe : SubscriberEvent::Kind::kCancel,
           std::string(data)});
      return OkStatus();
    }
    if (name == "ERROR") return Error::Unavailable("the peer sent ERROR");
    return Error::InvalidArgument("unexpected command " + Printable(name));
  }
  if (state_ != State::kOpen) return Error::InvalidArgument("a message before READY");
  if ((flags & kMore) != 0) return Error::InvalidArgument("a message of more than one frame");
  if (body.empty() || (body[0] != 0 && body[0] != 1)) {
    return Error::InvalidArgument("a message that is not a subscription");
  }
  if (++messages_ > limits_.max_messages) {
    return Error::ResourceExhausted("more than " + std::to_string(limits_.max_messages) +
                                    " subscriptions");
  }
  out.push_back({body[0] == 1 ? SubscriberEvent::Kind::kSubscribe : SubscriberEvent::Kind::kCancel,
                 std::string(body.substr(1))});
  return OkStatus();
}

}  // namespace halite::transport::zmtp
