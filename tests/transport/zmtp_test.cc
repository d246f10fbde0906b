// SubscriberStream: what a subscriber may send on the publish port, fed as bytes.
#include "halite/transport/zmtp.h"

#include <gtest/gtest.h>

namespace halite::transport::zmtp {
namespace {

std::string SubGreeting(char major = 3, std::string_view mechanism = "NULL") {
  std::string g(kGreetingSize, '\0');
  g[0] = static_cast<char>(0xff);
  g[9] = 0x7f;
  g[10] = major;
  g[11] = 1;
  g.replace(12, mechanism.size(), mechanism);
  return g;
}

std::string Frame(unsigned char flags, std::string_view body) {
  std::string f(1, static_cast<char>(flags));
  if (body.size() > 255) {
    f[0] = static_cast<char>(flags | 0x02);
    for (int shift = 56; shift >= 0; shift -= 8) {
      f.push_back(static_cast<char>(static_cast<std::uint64_t>(body.size()) >> shift));
    }
  } else {
    f.push_back(static_cast<char>(body.size()));
  }
  f.append(body);
  return f;
}

std::string Command(std::string_view name, std::string_view data) {
  std::string body(1, static_cast<char>(name.size()));
  body.append(name);
  body.append(data);
  return Frame(0x04, body);
}

std::string Handshake(std::string_view type = "SUB") { return SubGreeting() + ReadyCommand(type); }

TEST(ZmtpTest, OurGreetingIsZmtp30WithNull) {
  const std::string g = PubGreeting();
  ASSERT_EQ(g.size(), kGreetingSize);
  EXPECT_EQ(static_cast<unsigned char>(g[0]), 0xff);
  EXPECT_EQ(g[9], 0x7f);
  EXPECT_EQ(g[10], 3);
  EXPECT_EQ(g[11], 0);
  EXPECT_EQ(g.substr(12, 5), std::string("NULL\0", 5));
  EXPECT_EQ(ReadyCommand("PUB"), std::string("\x04\x19\x05READY\x0bSocket-Type\0\0\0\x03PUB", 27));
  EXPECT_EQ(MessageHeader(3), std::string("\x00\x03", 2));
  EXPECT_EQ(MessageHeader(256), std::string("\x02\0\0\0\0\0\0\x01\x00", 9));
  EXPECT_EQ(Pong("ab"), std::string("\x04\x07\x04PONGab", 9));
}

TEST(ZmtpTest, AHandshakeAndSubscriptionsByteByByte) {
  SubscriberStream stream({});
  const std::string bytes =
      Handshake() + Frame(0, std::string("\x01", 1)) + Frame(0, std::string("\x01topic", 6)) +
      Frame(0, std::string("\x00", 1)) + Command("SUBSCRIBE", "t3") + Command("CANCEL", "t3") +
      Command("PING", std::string("\0\x0a"
                                  "ctx",
                                  5));
  std::vector<SubscriberEvent> events;
  for (char c : bytes) ASSERT_TRUE(stream.Feed(std::string_view(&c, 1), events).ok());
  using K = SubscriberEvent::Kind;
  ASSERT_EQ(events.size(), 7u);
  EXPECT_EQ(events[0].kind, K::kReady);
  EXPECT_EQ(events[1].kind, K::kSubscribe);
  EXPECT_EQ(events[1].data, "");
  EXPECT_EQ(events[2].kind, K::kSubscribe);
  EXPECT_EQ(events[2].data, "topic");
  EXPECT_EQ(events[3].kind, K::kCancel);
  EXPECT_EQ(events[4].kind, K::kSubscribe);
  EXPECT_EQ(events[4].data, "t3");
  EXPECT_EQ(events[5].kind, K::kCancel);
  EXPECT_EQ(events[6].kind, K::kPing);
  EXPECT_EQ(events[6].data, "ctx");
  EXPECT_TRUE(stream.ready());
}

TEST(ZmtpTest, AnXsubIsASubscriberToo) {
  SubscriberStream stream({});
  std::vector<SubscriberEvent> events;
  ASSERT_TRUE(stream.Feed(Handshake("XSUB"), events).ok());
  EXPECT_TRUE(stream.ready());
}

// Each input that is not a subscriber's handshake and subscriptions ends the connection.
TEST(ZmtpTest, WhatASubscriberDoesNotSendIsAnError) {
  const std::string ready = ReadyCommand("SUB");
  auto subscriptions = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += Frame(0, "\x01" + std::to_string(i));
    return s;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not ZMTP", std::string("GET / HTTP/1.1\r\n\r\n") + std::string(64, 'x')},
      {"ZMTP 2", SubGreeting(1) + ready},
      {"CURVE", SubGreeting(3, "CURVE") + ready},
      {"a DEALER", SubGreeting() + ReadyCommand("DEALER")},
      {"READY without Socket-Type", SubGreeting() + Command("READY", "")},
      {"truncated READY",
       SubGreeting() + Command("READY", std::string("\x0bSocket-Type\0\0\0\x09SUB", 19))},
      {"a message before READY", SubGreeting() + Frame(0, "\x01")},
      {"reserved flags", Handshake() + Frame(0x80, "\x01")},
      {"a frame over the limit", Handshake() + Frame(0, "\x01" + std::string(1024, 'x'))},
      {"a declared 2^63 bytes", Handshake() + std::string("\x02\x7f\xff\xff\xff\xff\xff\xff\xff")},
      {"two frames", Handshake() + Frame(0x01, "\x01") + Frame(0, "\x01")},
      {"not a subscription", Handshake() + Frame(0, "\x02hello")},
      {"an empty message", Handshake() + Frame(0, "")},
      {"an unknown command", Handshake() + Command("HELLO", "")},
      {"ERROR", Handshake() + Command("ERROR", "\x03why")},
      {"a PING with a long context", Handshake() + Command("PING", std::string(20, 'x'))},
      {"65 subscriptions", Handshake() + subscriptions(65)},
  };
  for (const auto& [name, bytes] : cases) {
    SubscriberStream stream({});
    std::vector<SubscriberEvent> events;
    EXPECT_FALSE(stream.Feed(bytes, events).ok()) << name;
  }
  // 64 are taken.
  SubscriberStream stream({});
  std::vector<SubscriberEvent> events;
  EXPECT_TRUE(stream.Feed(Handshake() + subscriptions(64), events).ok());
  EXPECT_EQ(events.size(), 65u);
}

// Input is kept only until a frame is whole: a frame at the limit, then nothing is held.
TEST(ZmtpTest, AFrameAtTheLimitIsTaken) {
  SubscriberStream stream({});
  std::vector<SubscriberEvent> events;
  ASSERT_TRUE(stream.Feed(Handshake(), events).ok());
  ASSERT_TRUE(stream.Feed(Frame(0, "\x01" + std::string(1023, 'x')), events).ok());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].data.size(), 1023u);
}

}  // namespace
}  // namespace halite::transport::zmtp
