// Salt's external_auth ACLs (salt/utils/minions.py, CkMinions: fill_auth_list, auth_check,
// spec_check, match_check; salt/netapi sum_permissions) as pure functions of their arguments.
// An auth list is a wire::Array whose entries are
//   "regex"                                  a function any minion may run
//   {"target": ["regex" | {"regex": {"args": [..], "kwargs": {..}}}]}
//                                            functions the minions of a compound target may run
//   "@runner" "@wheel" "@jobs" "@<module>"  runner / wheel modules (spec_check)
//   {"@runner": [...]} {"@<module>": [...]}  runner / wheel functions by regex
// Regexes match as Python's re.match (anchored at the start only). Thread-safe.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::auth {

// Salt's salt.utils.stringutils.expr_match: equal, a glob match, or a full regex match.
bool ExprMatch(std::string_view line, std::string_view expr);

// Salt's fill_auth_list: the entries of one eauth backend's section of external_auth
// (`provider`, a map of user name or "group%" to a list) that apply to user `name` in
// `groups`: every "group%" the user is in, every name that ExprMatch-es `name`, and "*" only
// when no name matched (or always, with `permissive`). Keys starting with '^' (the file
// backend's settings) are skipped.
wire::Array FillAuthList(const wire::Value& provider, std::string_view name,
                         const std::vector<std::string>& groups, bool permissive);

// salt.netapi.sum_permissions + sorted_permissions, for /login's "perms": the user's own
// entries, then "*"'s, then those of the user's groups; strings sorted and de-duplicated
// first, then the other entries in the order of their JSON text.
wire::Array LoginPermissions(const wire::Value& provider, std::string_view name,
                             const std::vector<std::string>& groups);

// The minion ids a target selects, as the master would resolve it (accepted keys, cached
// grains). Used only for target-scoped entries.
using MinionResolver =
    std::function<Result<std::set<std::string>>(const wire::Value& tgt, std::string_view tgt_type)>;

// Salt's auth_check for a publish: whether `auth_list` allows `funs` (a name, or a list of
// names for a compound job with `args` then one argument list per function) with `args` on
// `tgt`/`tgt_type`. A resolver error denies.
bool AuthCheck(const wire::Array& auth_list, const wire::Value& funs, const wire::Value& args,
               const wire::Value& tgt, std::string_view tgt_type, const MinionResolver& resolve);

enum class SpecForm { kRunner, kWheel };

// Salt's spec_check for runner and wheel calls: `fun` is "module.function"; `arg` the
// positional arguments (or nil), `kwarg` the keyword arguments (a map, or nil).
// InvalidArgument "A command invocation error occurred: Check syntax." when `fun` is not two
// dotted parts, as Salt answers.
Result<bool> SpecCheck(const wire::Array& auth_list, std::string_view fun, const wire::Value& arg,
                       const wire::Value& kwarg, SpecForm form);

}  // namespace halite::auth
