// Salt's target matchers (salt-wire.md 7.2, 7.3): glob, pcre, list, grain, grain_pcre and
// compound (and / or / not / parentheses over G@ P@ E@ L@ and plain globs). Used by the
// master to resolve whom to wait for and by the minion to decide whether a job is its own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"
#include "halite/wire/glob.h"
#include "halite/wire/msgpack.h"

namespace halite::wire {

struct TargetContext {
  std::string_view id;
  // The minion's grains map, or nullptr when unknown. With `greedy` (the master's view), a
  // grain expression matches a minion whose grains are unknown, as Salt's check_minions does.
  const Value* grains = nullptr;
  bool greedy = false;
  std::string_view delimiter = ":";
};

// Limits on a compound expression, checked before it is evaluated.
inline constexpr std::size_t kMaxCompoundBytes = 256u << 10;
inline constexpr std::size_t kMaxCompoundTokens = 10'000;
inline constexpr std::size_t kMaxCompoundNesting = 100;  // '(' and 'not' that enclose a term

// Error::InvalidArgument for an unknown target type, a bad regex or a malformed compound
// expression; Error::ResourceExhausted for a compound expression over the limits above or a
// regex that hits its match limit (wire/regex.h); otherwise whether the minion matches.
// pcre, grain_pcre, E@ and P@ follow Python's re.match (anchored at the start only); each
// pattern is compiled once per thread (CompileRegexCached), so resolving one target against
// many minions compiles it once. A grain or id longer than RegexLimits::max_text_bytes
// (64 KiB) does not match a regex.
Result<bool> MatchTarget(const Value& tgt, std::string_view tgt_type, const TargetContext& ctx);

// The ids of a list target: a list of strings, or one comma-separated string (items trimmed).
std::vector<std::string> TargetListItems(const Value& tgt);

// Renders a scalar the way Python's str() would for matching (True/False/None, ints).
std::string ScalarToString(const Value& v);

}  // namespace halite::wire
