// Nodegroups to compound expressions, as Salt's nodegroup_comp and LocalClient._prep_pub.
#include <algorithm>
#include <set>

#include "halite/wire/target.h"

namespace halite::wire {

namespace {

bool IsOperator(std::string_view word) {
  return word == "and" || word == "or" || word == "not" || word == "(" || word == ")";
}

bool HasMatcherPrefix(std::string_view word) {
  return word.size() >= 2 && word[0] >= 'A' && word[0] <= 'Z' && word[1] == '@';
}

std::string Join(const std::vector<std::string>& words, std::string_view sep) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += sep;
    out += w;
  }
  return out;
}

// Salt's _nodegroup_regex: a definition of bare names is a list (or a pcre when a name holds a
// regex character); nullopt when it has operators, globs or matcher prefixes.
std::optional<std::string> AsListOrPcre(const std::vector<std::string>& words) {
  for (const auto& w : words) {
    if (IsOperator(w) || w.find('*') != std::string::npos || HasMatcherPrefix(w)) {
      return std::nullopt;
    }
  }
  const bool regex = std::any_of(words.begin(), words.end(), [](const std::string& w) {
    return w.find_first_of("([{\\?}])") != std::string::npos;
  });
  return (regex ? "E@" : "L@") + Join(words, ",");
}

Result<std::vector<std::string>> Expand(std::string_view name, const Nodegroups& nodegroups,
                                        std::set<std::string, std::less<>>& open, bool first) {
  if (open.contains(name)) {
    return Error::InvalidArgument("nodegroup '" + std::string(name) + "' includes itself");
  }
  auto it = nodegroups.find(std::string(name));
  if (it == nodegroups.end()) {
    return Error::InvalidArgument("Node group " + std::string(name) +
                                  " unavailable in the master config");
  }
  const std::vector<std::string>& words = it->second;
  if (words.empty()) {
    return Error::InvalidArgument("nodegroup '" + std::string(name) + "' is empty");
  }
  open.insert(it->first);
  std::vector<std::string> out{"("};
  bool nested = false;
  for (const auto& word : words) {
    if (word.size() >= 3 && word.rfind("N@", 0) == 0) {
      nested = true;
      auto inner = Expand(std::string_view(word).substr(2), nodegroups, open, false);
      if (!inner.ok()) {
        open.erase(it->first);
        return inner.error();
      }
      out.insert(out.end(), inner->begin(), inner->end());
    } else {
      out.push_back(word);
    }
  }
  out.push_back(")");
  open.erase(it->first);
  if (!nested || !first) {
    if (auto joined = AsListOrPcre(words)) return std::vector<std::string>{*joined};
  }
  if (!nested && first) return words;
  return out;
}

}  // namespace

Result<std::string> ExpandNodegroup(std::string_view name, const Nodegroups& nodegroups) {
  std::set<std::string, std::less<>> open;
  HALITE_ASSIGN_OR_RETURN(std::vector<std::string> words,
                          Expand(name, nodegroups, open, /*first=*/true));
  return Join(words, " ");
}

Result<std::string> ExpandCompoundNodegroups(std::string_view expr, const Nodegroups& nodegroups) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < expr.size()) {
    std::size_t start = expr.find_first_not_of(" \t\n\r\f\v", pos);
    if (start == std::string_view::npos) break;
    std::size_t end = expr.find_first_of(" \t\n\r\f\v", start);
    if (end == std::string_view::npos) end = expr.size();
    std::string_view word = expr.substr(start, end - start);
    if (word.size() > 2 && word.rfind("N@", 0) == 0) {
      HALITE_ASSIGN_OR_RETURN(std::string expanded, ExpandNodegroup(word.substr(2), nodegroups));
      out.push_back(std::move(expanded));
    } else {
      out.emplace_back(word);
    }
    pos = end;
  }
  return Join(out, " ");
}

}  // namespace halite::wire
