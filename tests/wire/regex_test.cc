#include "halite/wire/regex.h"

#include <gtest/gtest.h>

#include <string>

namespace halite::wire {
namespace {

// Expected values were checked with Python 3.11, e.g.
//   python3 -c 'import re; print(re.match(r"x\Z", "x\n"), re.match("x$", "x\n"))'
bool Matches(std::string_view pattern, std::string_view text,
             RegexAnchor anchor = RegexAnchor::kStart) {
  auto re = Regex::Compile(pattern);
  EXPECT_TRUE(re.ok()) << re.error().ToString();
  if (!re.ok()) return false;
  auto m = re->Match(text, anchor);
  EXPECT_TRUE(m.ok()) << m.error().ToString();
  return m.ok() && *m;
}

TEST(RegexTest, StartAnchorIsPythonReMatch) {
  EXPECT_TRUE(Matches("web", "web1"));
  EXPECT_FALSE(Matches("eb1", "web1"));
  EXPECT_TRUE(Matches("web\\d", "web1x"));
  EXPECT_TRUE(Matches("a|ab", "ab"));
}

TEST(RegexTest, FullAnchorIsPythonReFullmatch) {
  EXPECT_TRUE(Matches("web\\d", "web1", RegexAnchor::kFull));
  EXPECT_FALSE(Matches("web", "web1", RegexAnchor::kFull));
  EXPECT_TRUE(Matches("a|ab", "ab", RegexAnchor::kFull));  // backtracks into the second branch
}

TEST(RegexTest, EndOfTextFollowsPython) {
  EXPECT_TRUE(Matches("x$", "x\n"));     // '$' also matches before a final newline
  EXPECT_FALSE(Matches("x\\Z", "x\n"));  // Python's \Z is the very end
  EXPECT_TRUE(Matches("x\\Z", "x"));
  EXPECT_TRUE(Matches("x\\\\Z", "x\\Z"));  // an escaped backslash, then a literal Z
}

TEST(RegexTest, PythonSyntaxAndUnicode) {
  EXPECT_TRUE(Matches("(?P<n>a)(?P=n)", "aa"));
  EXPECT_TRUE(Matches("\\d", "\u0663"));  // ARABIC-INDIC DIGIT THREE: \d is Unicode
  EXPECT_TRUE(Matches("(?i)\u00e9", "\u00c9"));
  EXPECT_TRUE(Matches("^.$", "\u00e9"));  // '.' is one code point, not one byte
}

TEST(RegexTest, InvalidUtf8TextDoesNotMatchACharacterButIsNotAnError) {
  EXPECT_FALSE(Matches("^.$", "\xff"));
  EXPECT_TRUE(Matches("web", "web\xff"));
}

TEST(RegexTest, BadAndOverlongPatternsAreInvalidArgument) {
  for (const char* bad : {"web(", "[", "*+", "a{2,1}"}) {
    auto re = Regex::Compile(bad);
    ASSERT_FALSE(re.ok()) << bad;
    EXPECT_EQ(re.error().code, ErrorCode::kInvalidArgument);
  }
  auto re = Regex::Compile(std::string(5000, 'a'));
  ASSERT_FALSE(re.ok());
  EXPECT_EQ(re.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(re.error().message.find("longer than the limit"), std::string::npos);
}

// std::regex, which this replaces, ran (a|aa)*c on 40 'a's for ~fib(40) steps (the finding:
// a worker hung). PCRE2 gives up at once when there is no 'c' at all; with a 'c' that cannot
// be reached it backtracks until its match limit and says so.
TEST(RegexTest, CatastrophicBacktrackingHitsTheMatchLimit) {
  auto re = Regex::Compile("(a|aa)*c");
  ASSERT_TRUE(re.ok());
  auto no_c = re->Match(std::string(40, 'a'), RegexAnchor::kStart);
  ASSERT_TRUE(no_c.ok());
  EXPECT_FALSE(*no_c);
  auto m = re->Match(std::string(40, 'a') + "!c", RegexAnchor::kStart);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(m.error().message.find("limit"), std::string::npos) << m.error().message;
}

// One backtracking point per character of a 64 KiB text: std::regex recursed per character
// (a stack overflow); PCRE2 keeps its frames on the heap, under the heap limit.
TEST(RegexTest, LongTextWithinTheCapMatchesWithoutRecursion) {
  EXPECT_TRUE(Matches("(a|b)*$", std::string(RegexLimits{}.max_text_bytes, 'a')));
  // A smaller heap limit is an error, not a crash.
  RegexLimits small;
  small.heap_limit_kib = 1024;
  auto re = Regex::Compile("(a|b)*$", small);
  ASSERT_TRUE(re.ok());
  auto m = re->Match(std::string(small.max_text_bytes, 'a'), RegexAnchor::kStart);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kResourceExhausted);
}

TEST(RegexTest, TextOverTheCapDoesNotMatch) {
  RegexLimits limits;
  EXPECT_TRUE(Matches("a*", std::string(limits.max_text_bytes, 'a'), RegexAnchor::kFull));
  EXPECT_FALSE(Matches("a*", std::string(limits.max_text_bytes + 1, 'a')));
}

TEST(RegexTest, CacheCompilesEachPatternOncePerThread) {
  const std::size_t before = RegexCacheMissesForTest();
  for (int i = 0; i < 1000; ++i) {
    auto re = CompileRegexCached("cache-test-[0-9]+");
    ASSERT_TRUE(re.ok());
    EXPECT_TRUE(*re->Match("cache-test-7", RegexAnchor::kStart));
  }
  EXPECT_EQ(RegexCacheMissesForTest(), before + 1);
  // Failures are cached too, and stay errors.
  EXPECT_FALSE(CompileRegexCached("cache-test-(").ok());
  EXPECT_FALSE(CompileRegexCached("cache-test-(").ok());
  EXPECT_EQ(RegexCacheMissesForTest(), before + 2);
}

}  // namespace
}  // namespace halite::wire
