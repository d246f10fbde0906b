#pragma once
// Private to src/pillar: finding sls files under a saltenv's roots (Salt's file client, local),
// and merging rendered top files (Salt's merge_tops).

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "halite/pillar/compiler.h"
#include "halite/wire/msgpack.h"
#include "halite/wire/target.h"

namespace halite::pillar {

inline std::string ToText(const wire::Value& v) { return wire::ScalarToString(v); }

// "a.b" -> "a/b".
std::string SlsToPath(const std::string& sls);
// A relative path with no "..": what an sls name may become.
bool SafeRelative(const std::string& rel);
// The environment's roots, or nullptr.
const std::vector<std::string>* RootsOf(const Roots& roots, const std::string& env);

struct Found {
  std::string path;
  bool init = false;  // <sls>/init.sls
};
// Salt's get_state: `<sls>.sls` in any root first, then `<sls>/init.sls`.
std::optional<Found> FindSls(const std::vector<std::string>& dirs, const std::string& sls);
std::optional<std::string> FindFile(const std::vector<std::string>& dirs, const std::string& rel);
// The sls names of an environment, sorted (the file client's list_states).
std::vector<std::string> ListStates(const std::vector<std::string>& dirs);

// Rendered top files per saltenv, in saltenv order.
using Tops = std::vector<std::pair<std::string, std::vector<wire::Value>>>;
// merge_tops: {saltenv: {target: [match dicts..., sls...]}}, targets sorted by `order`. A top
// that is not a map of maps adds Salt's error to `top_errors` and gives {}; the sls of a target
// with `ignore_missing` are added to `ignored[saltenv]`.
wire::Value MergeTops(const Tops& tops, std::vector<std::string>& top_errors,
                      std::map<std::string, std::set<std::string>>& ignored);

}  // namespace halite::pillar
