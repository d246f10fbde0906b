// ZMTP 3.0 (rfc.zeromq.org/spec/23) as a PUB peer speaks it to subscribers, with the NULL
// mechanism that Salt's publish port uses: what halite's own publisher (pub_server.h) needs
// instead of libzmq's PUB, which keeps every distinct subscription a connection sends for as
// long as it lives (docs/security.md, finding 21).
//
// SubscriberStream reads what one subscriber connection sends: a greeting, a READY command,
// then subscriptions ("\x01<topic>", "\x00<topic>" or the 3.1 SUBSCRIBE/CANCEL commands) and
// PINGs. It keeps at most one frame of input and no subscription: the caller keeps what it
// needs. Anything else, a frame over the limit or more messages than a subscriber sends, is an
// error: the caller closes the connection. Not thread-safe; one per connection.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"

namespace halite::transport::zmtp {

inline constexpr std::size_t kGreetingSize = 64;

// Our greeting: ZMTP 3.0 with NULL, not as-server. Peers answer in 3.0, so subscriptions come
// as messages; the 3.1 commands are read too.
std::string PubGreeting();
// A READY command naming our socket type ("PUB").
std::string ReadyCommand(std::string_view socket_type);
// The header of a last (single) message frame of `size` bytes; the body follows it.
std::string MessageHeader(std::size_t size);
// The PONG command answering a PING with `context`.
std::string Pong(std::string_view context);

struct SubscriberLimits {
  std::size_t max_frame = 1024;   // bytes of one frame's body after the handshake
  std::size_t max_messages = 64;  // subscriptions and cancels over the connection's life
};

struct SubscriberEvent {
  enum class Kind { kReady, kSubscribe, kCancel, kPing };
  Kind kind;
  std::string data;  // the topic; the PING's context
};

class SubscriberStream {
 public:
  explicit SubscriberStream(SubscriberLimits limits) : limits_(limits) {}

  // Appends to `out` the events `bytes` completes. An error says why the connection must be
  // closed; after one, Feed must not be called again.
  Status Feed(std::string_view bytes, std::vector<SubscriberEvent>& out);

  bool ready() const { return state_ == State::kOpen; }

 private:
  enum class State { kGreeting, kReady, kOpen };
  static Status OnGreeting(std::string_view greeting);
  Status OnFrame(unsigned char flags, std::string_view body, std::vector<SubscriberEvent>& out);

  const SubscriberLimits limits_;
  State state_ = State::kGreeting;
  std::string buffer_;  // an incomplete greeting or frame
  std::size_t messages_ = 0;
};

}  // namespace halite::transport::zmtp
