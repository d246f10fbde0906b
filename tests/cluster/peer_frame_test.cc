#include "halite/cluster/peer_frame.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "halite/wire/msgpack.h"

namespace halite::cluster {
namespace {

constexpr std::size_t kMax = 1 << 20;
constexpr std::uint64_t kBigEpoch = std::numeric_limits<std::uint64_t>::max() - 5;

TEST(PeerFrameTest, DataFrameRoundTripsWithBinaryPayloadAndLargeEpoch) {
  std::string payload("\x00\xff\x80 bytes", 9);
  std::string bytes = EncodeDataFrame(42, kBigEpoch, 40, "publish", payload);
  auto frame = DecodeSenderFrame(bytes, kMax);
  ASSERT_TRUE(frame.ok()) << frame.error().ToString();
  const auto* data = std::get_if<DataFrame>(&*frame);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->seq, 42u);
  EXPECT_EQ(data->epoch, kBigEpoch);
  EXPECT_EQ(data->low, 40u);
  EXPECT_EQ(data->kind, "publish");
  EXPECT_EQ(data->payload, payload);

  // The wire shape: one msgpack map with these keys; the payload is bin.
  auto map = wire::Unpack(bytes);
  ASSERT_TRUE(map.ok());
  EXPECT_TRUE(map->Find("payload")->is_binary_str());
  EXPECT_EQ(*map->FindStr("kind"), "publish");
  EXPECT_EQ(map->Find("seq")->uint64(), 42u);
}

TEST(PeerFrameTest, HeartbeatAndAckRoundTrip) {
  auto hb = DecodeSenderFrame(EncodeHeartbeatFrame({kBigEpoch, 3, 9}), kMax);
  ASSERT_TRUE(hb.ok()) << hb.error().ToString();
  const auto* heartbeat = std::get_if<HeartbeatFrame>(&*hb);
  ASSERT_NE(heartbeat, nullptr);
  EXPECT_EQ(heartbeat->epoch, kBigEpoch);
  EXPECT_EQ(heartbeat->low, 3u);
  EXPECT_EQ(heartbeat->next, 9u);

  for (bool resend : {false, true}) {
    auto ack = DecodeAckFrame(EncodeAckFrame({17, kBigEpoch, resend}));
    ASSERT_TRUE(ack.ok()) << ack.error().ToString();
    EXPECT_EQ(ack->ack, 17u);
    EXPECT_EQ(ack->epoch, kBigEpoch);
    EXPECT_EQ(ack->resend, resend);
  }
}

TEST(PeerFrameTest, ClassTravelsInEveryFrameAndDefaultsToEvents) {
  auto data =
      DecodeSenderFrame(EncodeDataFrame(1, 9, 1, "publish", "p", PeerClass::kPublish), kMax);
  ASSERT_TRUE(data.ok()) << data.error().ToString();
  EXPECT_EQ(std::get<DataFrame>(*data).cls, PeerClass::kPublish);
  auto hb = DecodeSenderFrame(EncodeHeartbeatFrame({9, 1, 1, PeerClass::kPublish}), kMax);
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ(std::get<HeartbeatFrame>(*hb).cls, PeerClass::kPublish);
  auto ack = DecodeAckFrame(EncodeAckFrame({3, 9, false, PeerClass::kPublish}));
  ASSERT_TRUE(ack.ok());
  EXPECT_EQ(ack->cls, PeerClass::kPublish);

  // Without "cls" a frame is an event's; an unknown class is refused.
  auto plain =
      DecodeSenderFrame(wire::Pack(wire::Value::MapOf({{"seq", 1},
                                                       {"epoch", 9},
                                                       {"low", 1},
                                                       {"kind", "k"},
                                                       {"payload", wire::Value::Bin("x")}}),
                                   wire::Packing::kBinType),
                        kMax);
  ASSERT_TRUE(plain.ok()) << plain.error().ToString();
  EXPECT_EQ(std::get<DataFrame>(*plain).cls, PeerClass::kEvent);
  auto unknown =
      DecodeAckFrame(wire::Pack(wire::Value::MapOf({{"ack", 1}, {"epoch", 9}, {"cls", 2}})));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
}

TEST(PeerFrameTest, InconsistentNumbersAreRejected) {
  EXPECT_FALSE(DecodeSenderFrame(EncodeDataFrame(5, 1, 6, "k", "p"), kMax).ok());  // low > seq
  EXPECT_FALSE(DecodeSenderFrame(EncodeDataFrame(0, 1, 0, "k", "p"), kMax).ok());  // seq 0
  EXPECT_FALSE(DecodeSenderFrame(EncodeDataFrame(1, 0, 1, "k", "p"), kMax).ok());  // epoch 0
  EXPECT_FALSE(DecodeSenderFrame(EncodeHeartbeatFrame({1, 5, 4}), kMax).ok());     // low > next
}

TEST(PeerFrameTest, WrongShapesAreInvalidArgument) {
  std::vector<std::string> inputs = {
      "",
      "\xc1",
      wire::Pack(wire::Value(7)),
      wire::Pack(wire::Value::EmptyMap()),
      wire::Pack(wire::Value::MapOf({{"seq", "one"}, {"epoch", 1}, {"low", 1}})),
      wire::Pack(wire::Value::MapOf(
          {{"seq", 1}, {"epoch", 1}, {"low", 1}, {"kind", 3}, {"payload", "x"}})),
      wire::Pack(wire::Value::MapOf({{"seq", -1}, {"epoch", 1}, {"low", 1}})),
      wire::Pack(wire::Value::MapOf({{"hb", true}, {"epoch", 1}})),
  };
  for (const std::string& input : inputs) {
    auto frame = DecodeSenderFrame(input, kMax);
    ASSERT_FALSE(frame.ok());
    EXPECT_EQ(frame.error().code, ErrorCode::kInvalidArgument);
    EXPECT_FALSE(DecodeAckFrame(input).ok());
  }
  std::string big = EncodeDataFrame(1, 1, 1, "k", std::string(4096, 'x'));
  EXPECT_FALSE(DecodeSenderFrame(big, 1024).ok());
}

TEST(PeerFrameTest, TruncationsAndRandomBytesNeverCrash) {
  std::string bytes = EncodeDataFrame(7, 99, 1, "event", "payload bytes");
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeSenderFrame(bytes.substr(0, n), kMax).ok()) << n;
  }
  std::mt19937 random(1234);
  for (int round = 0; round < 2000; ++round) {
    std::string mutated = bytes;
    mutated[random() % mutated.size()] = static_cast<char>(random());
    (void)DecodeSenderFrame(mutated, kMax);
    (void)DecodeAckFrame(mutated);
  }
}

}  // namespace
}  // namespace halite::cluster
