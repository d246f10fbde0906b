#include "halite/wire/gzip.h"

#include <gtest/gtest.h>

namespace halite::wire {
namespace {

TEST(GzipTest, RoundTripsAndReadsWhatPythonsGzipWrote) {
  const std::string text(300000, 'x');
  auto packed = GzipCompress(text);
  ASSERT_TRUE(packed.ok());
  EXPECT_LT(packed->size(), 2000u);
  EXPECT_EQ(packed->substr(0, 2), "\x1f\x8b");
  auto back = GzipDecompress(*packed, 1 << 20);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, text);
  // gzip.compress(b'hello salt\n' * 3, mtime=0), Python 3.11.
  constexpr char kPython[] =
      "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\xcb\x48\xcd\xc9\xc9\x57\x28\x4e\xcc\x29\xe1\xca"
      "\xc0\xca\x04\x00\xdc\x11\x04\x55\x21\x00\x00\x00";
  const std::string python(kPython, sizeof kPython - 1);
  auto hello = GzipDecompress(python, 1000);
  ASSERT_TRUE(hello.ok()) << hello.error().message;
  EXPECT_EQ(*hello, "hello salt\nhello salt\nhello salt\n");
  auto empty = GzipCompress("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*GzipDecompress(*empty, 10), "");
}

TEST(GzipTest, BadTruncatedAndOversizedInputAreErrors) {
  auto packed = GzipCompress(std::string(100000, 'y'));
  ASSERT_TRUE(packed.ok());
  auto truncated = GzipDecompress(packed->substr(0, packed->size() / 2), 1 << 20);
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.error().code, ErrorCode::kInvalidArgument);
  auto garbage = GzipDecompress("not gzip at all", 1 << 20);
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().code, ErrorCode::kInvalidArgument);
  // A small input that inflates past the limit stops there instead of growing without bound.
  auto bomb = GzipDecompress(*packed, 1000);
  ASSERT_FALSE(bomb.ok());
  EXPECT_EQ(bomb.error().code, ErrorCode::kResourceExhausted);
}

}  // namespace
}  // namespace halite::wire
