// Salt's subdict_match (grain and pillar targets) and the ipcidr matcher.
#include <arpa/inet.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cstring>
#include <optional>

#include "halite/wire/glob.h"
#include "halite/wire/regex.h"
#include "halite/wire/target.h"

namespace halite::wire {

namespace {

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

class Work {
 public:
  explicit Work(std::size_t budget) : budget_(budget), left_(budget) {}
  Status Spend(std::size_t units) {
    if (units > left_) {
      left_ = 0;
      return Error::ResourceExhausted("target expression needs more than " +
                                      std::to_string(budget_) +
                                      " steps to match (too many '*' levels or delimiters)");
    }
    left_ -= units;
    return OkStatus();
  }

  // The pattern of the last scalar comparison, lowered (and compiled, for a glob): a "*:"
  // level compares one pattern with every value below it, so it is prepared once, not once per
  // value. The work units charged are the same either way.
  struct Prepared {
    std::string pattern;
    std::string lowered;
    std::optional<Glob> glob;
  };
  const Prepared& Prepare(const std::string& pattern, SubdictMode mode) {
    if (!last_ || last_->pattern != pattern) {
      last_.emplace();
      last_->pattern = pattern;
      last_->lowered = Lower(pattern);
    }
    if (mode == SubdictMode::kGlob && !last_->glob) last_->glob.emplace(last_->lowered);
    return *last_;
  }

 private:
  std::size_t budget_;
  std::size_t left_;
  std::optional<Prepared> last_;
};

// Salt's _match: str() of the value and the pattern, both lowercased.
Result<bool> MatchScalar(const Value& value, const std::string& pattern, SubdictMode mode,
                         Work& work) {
  const std::string text = Lower(ScalarToString(value));
  HALITE_RETURN_IF_ERROR(work.Spend(1 + (text.size() + pattern.size()) / 64));
  const Work::Prepared& prepared = work.Prepare(pattern, mode);
  switch (mode) {
    case SubdictMode::kRegex: {
      HALITE_ASSIGN_OR_RETURN(Regex re, CompileRegexCached(prepared.lowered));
      return re.Match(text, RegexAnchor::kStart);
    }
    case SubdictMode::kExact:
      return text == prepared.lowered;
    case SubdictMode::kGlob:
      return prepared.glob->Match(text);
  }
  return false;
}

bool MapHasKey(const Value& map, std::string_view key) {
  for (const auto& [k, v] : *map.map()) {
    if (ScalarToString(k) == key) return true;
  }
  return false;
}

Result<bool> DictMatch(const Value& map, std::string pattern, std::string_view delimiter,
                       SubdictMode mode, int depth, Work& work);

// Salt's traverse_dict_and_list: nullptr where it would return its default.
Result<const Value*> Traverse(const Value& data, std::string_view key, std::string_view delimiter,
                              Work& work) {
  const Value* ptr = &data;
  std::size_t start = 0;
  for (;;) {
    HALITE_RETURN_IF_ERROR(work.Spend(1));
    std::size_t next = key.find(delimiter, start);
    std::string_view each =
        key.substr(start, next == std::string_view::npos ? key.npos : next - start);
    if (const Array* list = ptr->array()) {
      const Value* found = nullptr;
      for (const Value& embedded : *list) {
        if (embedded.is_map()) {
          if ((found = embedded.Find(each)) != nullptr) break;
        }
      }
      if (found == nullptr) {
        std::size_t index = 0;
        auto [end, ec] = std::from_chars(each.data(), each.data() + each.size(), index);
        if (ec != std::errc() || end != each.data() + each.size() || index >= list->size()) {
          return static_cast<const Value*>(nullptr);
        }
        found = &(*list)[index];
      }
      ptr = found;
    } else if (const Map* map = ptr->map()) {
      const Value* found = ptr->Find(each);
      if (found == nullptr) {
        // Salt retries with the key YAML-loaded, which is how "1" reaches an integer key.
        for (const auto& [k, v] : *map) {
          if (!k.is_str() && ScalarToString(k) == each) {
            found = &v;
            break;
          }
        }
      }
      if (found == nullptr) return static_cast<const Value*>(nullptr);
      ptr = found;
    } else {
      return static_cast<const Value*>(nullptr);
    }
    if (next == std::string_view::npos) return ptr;
    start = next + delimiter.size();
  }
}

constexpr int kMaxSubdictDepth = 64;
// Every split point is tried and each walks the key path, so the work grows with the square
// of the delimiter count; real expressions have a handful.
constexpr std::size_t kMaxDelimiters = 256;

Result<bool> Subdict(const Value& data, std::string_view expr, std::string_view delimiter,
                     SubdictMode mode, int depth, Work& work) {
  if (depth > kMaxSubdictDepth) return false;
  std::vector<std::size_t> cuts;  // offsets of each delimiter in expr
  for (std::size_t pos = expr.find(delimiter); pos != std::string_view::npos;
       pos = expr.find(delimiter, pos + delimiter.size())) {
    cuts.push_back(pos);
    if (cuts.size() > kMaxDelimiters) {
      return Error::ResourceExhausted("target expression has more than " +
                                      std::to_string(kMaxDelimiters) + " delimiters");
    }
  }
  for (auto it = cuts.rbegin(); it != cuts.rend(); ++it) {
    HALITE_RETURN_IF_ERROR(work.Spend(1 + expr.size() / 256));  // a pattern copy per split
    std::string_view key = expr.substr(0, *it);
    std::string pattern;
    const Value* match = nullptr;
    if (key == "*") {
      pattern = std::string(expr);
      match = &data;
    } else {
      pattern = std::string(expr.substr(*it + delimiter.size()));
      HALITE_ASSIGN_OR_RETURN(match, Traverse(data, key, delimiter, work));
    }
    if (match == nullptr || (match->is_map() && match->map()->empty())) continue;
    if (match->is_map()) {
      HALITE_ASSIGN_OR_RETURN(bool m, DictMatch(*match, pattern, delimiter, mode, depth + 1, work));
      if (m) return true;
      continue;
    }
    if (const Array* list = match->array()) {
      for (const Value& member : *list) {
        if (member.is_map()) {
          HALITE_ASSIGN_OR_RETURN(bool m,
                                  DictMatch(member, pattern, delimiter, mode, depth + 1, work));
          if (m) return true;
        }
        HALITE_ASSIGN_OR_RETURN(bool m, MatchScalar(member, pattern, mode, work));
        if (m) return true;
      }
      continue;
    }
    HALITE_ASSIGN_OR_RETURN(bool m, MatchScalar(*match, pattern, mode, work));
    if (m) return true;
  }
  return false;
}

// Salt's _dict_match: a key name, "*" (any key), a deeper expression, or with a "*:" prefix
// the pattern against every value one level down.
Result<bool> DictMatch(const Value& map, std::string pattern, std::string_view delimiter,
                       SubdictMode mode, int depth, Work& work) {
  if (depth > kMaxSubdictDepth) return false;
  HALITE_RETURN_IF_ERROR(work.Spend(1));
  const bool wildcard = pattern.rfind("*:", 0) == 0;
  if (wildcard) pattern.erase(0, 2);
  if (pattern == "*" || MapHasKey(map, pattern)) return true;
  HALITE_ASSIGN_OR_RETURN(bool deeper, Subdict(map, pattern, delimiter, mode, depth, work));
  if (deeper || !wildcard) return deeper;
  for (const auto& [key, value] : *map.map()) {
    if (value.is_map()) {
      HALITE_ASSIGN_OR_RETURN(bool m, DictMatch(value, pattern, delimiter, mode, depth + 1, work));
      if (m) return true;
    } else if (const Array* list = value.array()) {
      for (const Value& item : *list) {
        HALITE_ASSIGN_OR_RETURN(bool m, MatchScalar(item, pattern, mode, work));
        if (m) return true;
      }
    } else {
      HALITE_ASSIGN_OR_RETURN(bool m, MatchScalar(value, pattern, mode, work));
      if (m) return true;
    }
  }
  return false;
}

struct IpAddress {
  int family = 0;  // AF_INET or AF_INET6
  std::array<unsigned char, 16> bytes{};
  std::size_t size() const { return family == AF_INET ? 4 : 16; }
};

std::optional<IpAddress> ParseAddress(std::string_view text) {
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return std::nullopt;
  const std::string copy(text);  // inet_pton needs a terminated string; it never resolves names
  IpAddress ip;
  if (::inet_pton(AF_INET, copy.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET;
    return ip;
  }
  if (::inet_pton(AF_INET6, copy.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET6;
    return ip;
  }
  return std::nullopt;
}

std::string AddressText(const IpAddress& ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(ip.family, ip.bytes.data(), buf, sizeof buf);
  return buf;
}

struct IpNetwork {
  IpAddress base;
  std::size_t prefix = 0;
};

bool BitSet(const IpAddress& ip, std::size_t bit) {
  return (ip.bytes[bit / 8] >> (7 - bit % 8)) & 1;
}

// Python's ipaddress.ip_network (strict): "addr/prefix" or, for IPv4, "addr/netmask"; host
// bits must be zero.
std::optional<IpNetwork> ParseNetwork(std::string_view text) {
  std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto base = ParseAddress(text.substr(0, slash));
  if (!base) return std::nullopt;
  std::string_view mask = text.substr(slash + 1);
  const std::size_t bits = base->size() * 8;
  IpNetwork net{*base, 0};
  auto [end, ec] = std::from_chars(mask.data(), mask.data() + mask.size(), net.prefix);
  if (mask.empty() || ec != std::errc() || end != mask.data() + mask.size()) {
    auto netmask = base->family == AF_INET ? ParseAddress(mask) : std::nullopt;
    if (!netmask || netmask->family != AF_INET) return std::nullopt;
    net.prefix = 0;
    while (net.prefix < bits && BitSet(*netmask, net.prefix)) ++net.prefix;
    for (std::size_t b = net.prefix; b < bits; ++b) {
      if (BitSet(*netmask, b)) return std::nullopt;
    }
  }
  if (net.prefix > bits) return std::nullopt;
  for (std::size_t b = net.prefix; b < bits; ++b) {
    if (BitSet(*base, b)) return std::nullopt;
  }
  return net;
}

bool InNetwork(const IpNetwork& net, const IpAddress& ip) {
  if (ip.family != net.base.family) return false;
  for (std::size_t b = 0; b < net.prefix; ++b) {
    if (BitSet(ip, b) != BitSet(net.base, b)) return false;
  }
  return true;
}

}  // namespace

Result<bool> SubdictMatch(const Value& data, std::string_view expr, std::string_view delimiter,
                          SubdictMode mode, std::size_t work_budget) {
  if (delimiter.empty()) return Error::InvalidArgument("empty target delimiter");
  Work work(work_budget);
  return Subdict(data, expr, delimiter, mode, 0, work);
}

bool IpCidrMatch(std::string_view tgt, const Value& grains) {
  std::optional<IpAddress> address = ParseAddress(tgt);
  std::optional<IpNetwork> network;
  if (!address) {
    network = ParseNetwork(tgt);
    if (!network) return false;
  }
  const int family = address ? address->family : network->base.family;
  const Value* listed = grains.Find(family == AF_INET ? "ipv4" : "ipv6");
  if (listed == nullptr) return false;
  std::vector<const Value*> items;
  if (const Array* list = listed->array()) {
    for (const Value& v : *list) items.push_back(&v);
  } else {
    items.push_back(listed);
  }
  if (address) {
    // Salt: str(address) in grains[proto], the canonical text against the grain's strings.
    const std::string canonical = AddressText(*address);
    for (const Value* v : items) {
      if (const std::string* s = v->str(); s != nullptr && *s == canonical) return true;
    }
    return false;
  }
  for (const Value* v : items) {
    const std::string* s = v->str();
    if (s == nullptr) continue;
    auto ip = ParseAddress(*s);
    if (ip && InNetwork(*network, *ip)) return true;
  }
  return false;
}

}  // namespace halite::wire
