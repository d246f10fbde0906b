// Regular expressions for Salt's matchers (pcre targets, autosign/autoreject files), on PCRE2
// with bounded work: the matcher keeps its backtracking stack on the heap (never recursing on
// the machine stack) and every match has a match limit, a depth limit and a heap limit.
//
// Syntax and meaning follow Python's `re` on str as far as PCRE2 allows: UTF-8 with Unicode
// \d \w \s \b and case folding (PCRE2_UCP), `$` also before a final newline, `\Z` is the very
// end (translated to PCRE2's `\z`). Known gaps: Python's `{,n}` is a literal in PCRE2 10.42,
// `\uXXXX` escapes are not understood, and PCRE2-only syntax (\Q..\E, (*VERB)s) is accepted.
//
// Errors are values: a bad or over-long pattern is kInvalidArgument from Compile; a match that
// hits a limit is kResourceExhausted from Match. Text longer than max_text_bytes, or bytes that
// are not valid UTF-8 where the pattern needs a character, never match (Python could not hold
// such a grain as str, and a minion must not make a target fail for everyone by sending one).
// Thread-safety: a compiled Regex is immutable and may be matched from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "halite/common/result.h"

namespace halite::wire {

struct RegexLimits {
  std::size_t max_pattern_bytes = 4096;
  std::size_t max_text_bytes = 64u << 10;
  std::uint32_t match_limit = 1'000'000;  // PCRE2 match() calls, i.e. backtracking steps
  std::uint32_t depth_limit = 1'000'000;  // nested backtracking points
  // Backtracking frames of one match (~256 bytes per nested backtracking point, the buffer
  // doubling as it grows): (a|b)*$ over a 64 KiB text needs 32 MiB.
  std::uint32_t heap_limit_kib = 32u << 10;
};

enum class RegexAnchor {
  kStart,  // Python re.match: anchored at the start only (Salt's pcre matchers)
  kFull,   // Python re.fullmatch: the whole text
};

class Regex {
 public:
  // kInvalidArgument for a pattern over limits.max_pattern_bytes or one PCRE2 refuses.
  static Result<Regex> Compile(std::string_view pattern, const RegexLimits& limits = {});

  // Whether `text` matches. kResourceExhausted when the match hits a limit.
  Result<bool> Match(std::string_view text, RegexAnchor anchor) const;

  const std::string& pattern() const;

 private:
  struct Compiled;
  explicit Regex(std::shared_ptr<const Compiled> compiled) : compiled_(std::move(compiled)) {}
  std::shared_ptr<const Compiled> compiled_;
};

// Compile with the default limits through a small per-thread cache (the last 64 patterns,
// failures included), so matching one target against 10,000 minions compiles it once.
Result<Regex> CompileRegexCached(std::string_view pattern);

// Python's re.match(pattern, text) as Salt's ACLs use it (peer:, peer_run:, mine_get:), through
// the per-thread cache; a pattern that does not compile, or a match over its limits, is false.
bool ReMatchOrFalse(std::string_view pattern, std::string_view text);

// Compilations CompileRegexCached did on this thread (cache misses).
std::size_t RegexCacheMissesForTest();

}  // namespace halite::wire
