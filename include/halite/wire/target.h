// Salt's target matchers (salt-wire.md 7.2, 7.3): glob, pcre, list, grain, grain_pcre,
// pillar, pillar_pcre, pillar_exact, ipcidr, nodegroup and compound (and / or / not /
// parentheses over G@ P@ I@ J@ S@ E@ L@ N@ and plain globs), and Salt's
// compound_pillar_exact (a compound whose I@ and J@ terms compare pillar values exactly, as
// Salt's master resolves a minion's mine_get). Used by the master to resolve whom to wait for
// (publish, mine_get, pillar top) and by the minion to decide whether a job is its own. Pure
// functions of their arguments; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/cpu_budget.h"
#include "halite/common/result.h"
#include "halite/wire/glob.h"
#include "halite/wire/msgpack.h"

namespace halite::wire {

// The master config's `nodegroups:`: name -> the words of its definition (a string split at
// whitespace, a list item by item), which is how Salt's nodegroup_comp reads either form.
using Nodegroups = std::map<std::string, std::vector<std::string>>;

// The work one SubdictMatch may do. Each "*:" level of an expression retries every split point
// and walks every value below it again, so the work grows as a high power of the wildcard
// count (stock Salt takes 8.5 s over a small dict for 48 wildcards; target_fuzz found a 281-byte
// expression that took 86 ms here). A unit is one split point tried, one key walked, one map
// entered or one value compared, plus one per 256 bytes of pattern copied and per 64 compared.
// Real targets use tens of units, a "*:" over a map of 10,000 entries about five per entry;
// the budget bounds one match to ~10 ms (the master's ResolveTargets also bounds a whole
// resolution's CPU).
inline constexpr std::size_t kSubdictWorkBudget = 200'000;

struct TargetContext {
  std::string_view id;
  // The minion's grains map, or nullptr when unknown. With `greedy` (the master's view), a
  // grain expression matches a minion whose grains are unknown, as Salt's check_minions does.
  const Value* grains = nullptr;
  bool greedy = false;
  std::string_view delimiter = ":";
  // The minion's pillar, or nullptr when unknown; `greedy` applies as for grains.
  const Value* pillar = nullptr;
  // For tgt_type "nodegroup" and N@ terms; nullptr: none configured (a minion's view: Salt's
  // client expands nodegroups before publishing, see ExpandCompoundNodegroups).
  const Nodegroups* nodegroups = nullptr;
  // When set, checked before each term of a compound expression (each term's own work is
  // bounded: a regex by its match limit, a grain or pillar match by its step budget, but a
  // 256 KiB expression holds thousands of terms); its error is MatchTarget's.
  const CpuBudget* cpu_budget = nullptr;
  // Each grain or pillar match's work (SubdictMatch); only target_fuzz sets less, to try more
  // inputs per second.
  std::size_t subdict_work_budget = kSubdictWorkBudget;
};

// Limits on a compound expression, checked before it is evaluated.
inline constexpr std::size_t kMaxCompoundBytes = 256u << 10;
inline constexpr std::size_t kMaxCompoundTokens = 10'000;
inline constexpr std::size_t kMaxCompoundNesting = 100;  // '(' and 'not' that enclose a term

// Error::InvalidArgument for an unknown target type, a bad regex or a malformed compound
// expression; Error::ResourceExhausted for a compound expression over the limits above or a
// regex that hits its match limit (wire/regex.h) or a compound expression over
// ctx.cpu_budget; otherwise whether the minion matches.
// pcre, grain_pcre, E@ and P@ follow Python's re.match (anchored at the start only); each
// pattern is compiled once per thread (CompileRegexCached), so resolving one target against
// many minions compiles it once. A grain or id longer than RegexLimits::max_text_bytes
// (64 KiB) does not match a regex.
Result<bool> MatchTarget(const Value& tgt, std::string_view tgt_type, const TargetContext& ctx);

// Salt's nodegroup_comp + the client's join: the compound expression nodegroup `name` stands
// for. Nested N@ terms are expanded in parentheses; a definition with no operator, no '*' and
// no matcher prefix becomes "L@a,b" (or "E@..." when a word holds a regex character).
// Error::InvalidArgument for an unknown nodegroup, one that includes itself or an empty one
// (Salt logs these and drops the term, which silently widens or narrows the target).
Result<std::string> ExpandNodegroup(std::string_view name, const Nodegroups& nodegroups);
// A compound expression with every whitespace-separated "N@name" word replaced by its
// expansion, as Salt's LocalClient does before publishing so that minions need no nodegroups.
Result<std::string> ExpandCompoundNodegroups(std::string_view expr, const Nodegroups& nodegroups);

enum class SubdictMode { kGlob, kRegex, kExact };
// Salt's subdict_match on grains or pillar: `expr` is "key:sub:...:pattern"; every split at
// the delimiter is tried (the deepest key first), lists match when a member does, a map
// matches when the pattern names one of its keys ("*" for any). Values and patterns compare
// lowercased, as Salt's do. False when `expr` has no delimiter. Errors as MatchTarget's (a bad
// regex, a regex over its match limit), and Error::ResourceExhausted for more than 256
// delimiters or an expression whose "*:" levels would need more than a fixed amount of work
// (a few milliseconds) against `data`, where Salt would spend seconds to hours.
Result<bool> SubdictMatch(const Value& data, std::string_view expr, std::string_view delimiter,
                          SubdictMode mode, std::size_t work_budget = kSubdictWorkBudget);

// Salt's ipcidr matcher: `tgt` is an address (matches when the `ipv4` or `ipv6` grain list
// holds it) or a network "addr/prefix" or "addr/netmask" without host bits (matches when any
// address in that grain is inside). An invalid target matches nothing, as in Salt.
bool IpCidrMatch(std::string_view tgt, const Value& grains);

// The ids of a list target: a list of strings, or one comma-separated string (items trimmed).
std::vector<std::string> TargetListItems(const Value& tgt);

// Renders a scalar the way Python's str() would for matching (True/False/None, ints).
std::string ScalarToString(const Value& v);

}  // namespace halite::wire
