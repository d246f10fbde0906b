#include "halite/wire/encoding.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace halite::wire {
namespace {

TEST(EncodingTest, HexRoundTripIsLowercase) {
  const std::string bytes("\x00\x01\xab\xff\x7f", 5);
  EXPECT_EQ(HexEncode(bytes), "0001abff7f");
  auto decoded = HexDecode("0001ABff7F");
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, bytes);
  EXPECT_EQ(HexEncode(""), "");
  EXPECT_EQ(HexDecode("").value(), "");
}

TEST(EncodingTest, HexDecodeRejectsOddLengthAndBadCharacters) {
  EXPECT_EQ(HexDecode("abc").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(HexDecode("zz").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(HexDecode("0g").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(HexDecode(" 00").error().code, ErrorCode::kInvalidArgument);
}

TEST(EncodingTest, Base64MatchesRfc4648Vectors) {
  const std::pair<const char*, const char*> cases[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : cases) {
    EXPECT_EQ(Base64Encode(plain), encoded);
    auto decoded = Base64Decode(encoded);
    ASSERT_TRUE(decoded.ok()) << encoded;
    EXPECT_EQ(*decoded, plain);
  }
}

TEST(EncodingTest, Base64RoundTripsEveryByteValue) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  for (std::size_t n = 0; n <= bytes.size(); n += 37) {
    const std::string prefix = bytes.substr(0, n);
    EXPECT_EQ(Base64Decode(Base64Encode(prefix)).value(), prefix);
  }
  EXPECT_EQ(Base64Encode("\xfb\xff"), "+/8=");
}

TEST(EncodingTest, Base64DecodeIsStrict) {
  for (const char* bad : {"Zg=", "Zg", "Z", "Zm9v\n", " Zm9v", "Zm9v====", "Z===", "=Zm9", "Zm=v",
                          "Zm9-", "Zm9_", "Zg==Zg=="}) {
    auto decoded = Base64Decode(bad);
    ASSERT_FALSE(decoded.ok()) << bad;
    EXPECT_EQ(decoded.error().code, ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(Base64Decode(std::string_view("Zm9v\0\0\0\0", 8)).ok());
}

TEST(EncodingTest, DigestsMatchKnownAnswers) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha1Hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Sha256("abc").size(), 32u);
  EXPECT_EQ(Sha1("").size(), 20u);
  EXPECT_EQ(HexEncode(Sha1("abc")), Sha1Hex("abc"));
  // publish.json: the zmq_filtering topic is the SHA-1 hex of the minion id.
  EXPECT_EQ(Sha1Hex("minion1"), "3a6368820dfef5cb63f445da216ea8ca511a97b4");
}

TEST(EncodingTest, RandomBytesHaveTheRequestedSizeAndDiffer) {
  EXPECT_EQ(RandomBytes(0), "");
  EXPECT_EQ(RandomBytes(56).size(), 56u);
  EXPECT_NE(RandomBytes(32), RandomBytes(32));
}

TEST(EncodingTest, RandomNonceIs32LowercaseHexCharacters) {
  std::set<std::string> seen;
  for (int i = 0; i < 16; ++i) {
    const std::string nonce = RandomNonce();
    ASSERT_EQ(nonce.size(), 32u);
    EXPECT_EQ(nonce.find_first_not_of("0123456789abcdef"), std::string::npos) << nonce;
    seen.insert(nonce);
  }
  EXPECT_EQ(seen.size(), 16u);
}

TEST(EncodingTest, ConstantTimeEqualsComparesContentAndSize) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("a\0", 2), "a"));
}

}  // namespace
}  // namespace halite::wire
