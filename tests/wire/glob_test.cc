#include "halite/wire/glob.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace halite::wire {
namespace {

struct GlobCase {
  const char* pattern;
  const char* text;
  bool matches;
};

// Every expectation is Python's; regenerate with, e.g.
//   python3 -c 'import fnmatch; print(fnmatch.fnmatchcase("a\\b", "a\\b"))'
// (fnmatchcase(text, pattern); Python 3.11.7 here.) glibc fnmatch(3), used before, disagrees
// on the rows marked "glibc": it treats '\' as an escape and '[!]]' / '[z-a]' differently.
constexpr GlobCase kPythonCases[] = {
    {"a\\b", "a\\b", true},  // glibc: false ('\b' is an escaped 'b')
    {"a\\*", "a\\x", true},  // glibc: false
    {"a\\*", "a*", false},   // glibc: true
    {"[abc", "[abc", true},  // '[' without ']' is literal
    {"[abc", "a", false},
    {"[!a]x", "bx", true},
    {"[!a]x", "ax", false},
    {"*", "a/b", true},  // '*' and '?' match '/'
    {"a?c", "a/c", true},
    {"*", "a\nb", true},  // and newlines
    {"[^a]", "^", true},  // '^' is a member, not a negation
    {"[^a]", "b", false},
    {"[]]", "]", true},
    {"[!]]", "a", true},
    {"[!]]", "]", false},
    {"[z-a]", "z", false},  // an empty range matches nothing
    {"[z-a]", "-", false},
    {"[!z-a]", "q", true},  // ... and its complement anything
    {"[a-]", "-", true},
    {"[-a]", "-", true},
    {"[a-c-e]", "d", false},
    {"[a-c-e]", "-", true},
    {"[a-c-e]", "e", true},
    {"[b-a-c]", "-", true},
    {"[b-a-c]", "b", false},
    {"[b-a-c]", "c", true},
    {"[a-cx-z]", "y", true},
    {"[[:alpha:]]", "a", false},  // no POSIX classes: the set is "[:alph" then ']'
    {"[[:alpha:]]", "a]", true},
    {"[\\]]", "\\]", true},
    {"[\\]", "\\", true},
    {"[a&&b]", "&", true},
    {"[!", "[!", true},
    {"[]", "[]", true},
    {"[!]", "[!]", true},
    {"?", "\u00e9", true},  // one code point, not one byte
    {"[\u00e9]", "\u00e9", true},
    {"", "", true},
    {"a", "", false},
    {"**a", "a", true},
    {"web*", "web1", true},
    {"WEB*", "web1", false},  // case-sensitive
};

TEST(GlobTest, FollowsPythonFnmatchcase) {
  for (const GlobCase& c : kPythonCases) {
    EXPECT_EQ(GlobMatch(c.pattern, c.text), c.matches)
        << "fnmatchcase(" << c.text << ", " << c.pattern << ")";
  }
}

TEST(GlobTest, ACompiledGlobAnswersAsGlobMatchForEveryText) {
  // Each pattern compiled once and matched against every text of the table, moved in between.
  for (const GlobCase& p : kPythonCases) {
    Glob compiled(p.pattern);
    Glob moved = std::move(compiled);
    for (const GlobCase& t : kPythonCases) {
      EXPECT_EQ(moved.Match(t.text), GlobMatch(p.pattern, t.text))
          << "fnmatchcase(" << t.text << ", " << p.pattern << ")";
    }
  }
}

// glibc fnmatch backtracks once per '*' and position: this pair took it C(20000, 10) steps
// (the old target.cc hung here). The matcher is O(pattern * text).
TEST(GlobTest, ManyStarsAgainstALongTextFinishInLinearPasses) {
  const std::string text(20000, 'a');
  EXPECT_FALSE(GlobMatch("*a*a*a*a*a*a*a*a*a*a*b", text));
  EXPECT_TRUE(GlobMatch("*a*a*a*a*a*a*a*a*a*a*", text));
  EXPECT_TRUE(GlobMatch("*a*a*a*a*a*a*a*a*a*a*b", text + "b"));
}

TEST(GlobTest, InvalidUtf8BytesAreCharactersOfTheirOwn) {
  EXPECT_TRUE(GlobMatch("?", "\xff"));
  EXPECT_FALSE(GlobMatch("a?b",
                         "a\xc3z"
                         "b"));
  EXPECT_TRUE(GlobMatch("a??b",
                        "a\xc3z"
                        "b"));
}

TEST(GlobTest, NegatedClassStartingWithAHyphen) {
  // python3 -c "import fnmatch; print([fnmatch.fnmatchcase(c, '[!-x]') for c in '-xab'])"
  // -> [False, False, True, True]. Found by target_fuzz (a read before an empty chunk).
  EXPECT_FALSE(GlobMatch("[!-x]", "-"));
  EXPECT_FALSE(GlobMatch("[!-x]", "x"));
  EXPECT_TRUE(GlobMatch("[!-x]", "a"));
  EXPECT_TRUE(GlobMatch("[!-x]", "b"));
}

}  // namespace
}  // namespace halite::wire
