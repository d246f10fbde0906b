// YAML 1.1 scalars as PyYAML's resolver and Salt's SaltYamlSafeLoader read them, and Salt's
// yamlify_arg / parse_input rules on top. yaml-cpp gives the structure (flow collections,
// quoting, tags, anchors); the scalar typing is ours, because yaml-cpp follows YAML 1.2.
#include "halite/client/cli_args.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "halite/config/yaml.h"
#include "halite/wire/keyed_map.h"
#include "halite/wire/regex.h"

namespace halite::client {

namespace {

constexpr int kMaxDepth = 64;

// PyYAML's implicit resolvers, matched with PCRE2 (wire::Regex: backtracking on the heap,
// bounded), not the standard library's matcher, which recurses once per character: a word of
// 130,000 digits overflowed the stack, and one such salt-api form field crashed halite-api
// before any login (docs/security.md, finding 13). Text of any length is looked at, as Python
// would; a match that hits a PCRE2 limit reads as no match (the word stays a string).
wire::Regex ScalarRegex(const char* pattern) {
  wire::RegexLimits limits;
  limits.max_text_bytes = std::numeric_limits<std::size_t>::max();
  return wire::Regex::Compile(pattern, limits).value();
}
const wire::Regex& BoolRe() {
  static const wire::Regex re = ScalarRegex(
      "yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|"
      "off|Off|OFF");
  return re;
}
const wire::Regex& IntRe() {
  static const wire::Regex re = ScalarRegex(
      "[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|"
      "[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+");
  return re;
}
const wire::Regex& FloatRe() {
  static const wire::Regex re = ScalarRegex(
      "[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?|\\.[0-9_]+(?:[eE][-+][0-9]+)?|"
      "[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*|[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN)");
  return re;
}
const wire::Regex& NullRe() {
  static const wire::Regex re = ScalarRegex("~|null|Null|NULL|");
  return re;
}
bool FullMatch(const std::string& text, const wire::Regex& re) {
  auto m = re.Match(text, wire::RegexAnchor::kFull);
  return m.ok() && *m;
}

std::string WithoutUnderscores(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c != '_') out.push_back(c);
  }
  return out;
}

// PyYAML's construct_yaml_int, with Salt's leading zeros read as decimal; nullopt beyond 64
// bits.
std::optional<wire::Value> ConstructInt(std::string_view text) {
  std::string v = WithoutUnderscores(text);
  bool negative = false;
  if (!v.empty() && (v[0] == '-' || v[0] == '+')) {
    negative = v[0] == '-';
    v.erase(0, 1);
  }
  unsigned __int128 magnitude = 0;
  constexpr unsigned __int128 kLimit = static_cast<unsigned __int128>(1) << 64;
  auto accumulate = [&](std::string_view digits, int base) {
    for (char c : digits) {
      int d = std::isdigit(static_cast<unsigned char>(c))
                  ? c - '0'
                  : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
      magnitude = magnitude * base + d;
      if (magnitude >= kLimit) return false;
    }
    return true;
  };
  bool ok = true;
  if (v.rfind("0b", 0) == 0) {
    ok = accumulate(std::string_view(v).substr(2), 2);
  } else if (v.rfind("0x", 0) == 0) {
    ok = accumulate(std::string_view(v).substr(2), 16);
  } else if (v.find(':') != std::string::npos) {
    std::size_t start = 0;
    while (ok) {
      std::size_t colon = v.find(':', start);
      std::string_view part =
          std::string_view(v).substr(start, colon == std::string::npos ? v.npos : colon - start);
      unsigned __int128 before = magnitude;
      magnitude = 0;
      ok = accumulate(part, 10);
      magnitude += before * 60;
      if (magnitude >= kLimit) ok = false;
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  } else {
    ok = accumulate(v, 10);  // "010" is 10 for Salt (it strips the zeros YAML 1.1 reads as octal)
  }
  if (!ok) return std::nullopt;
  if (negative) {
    if (magnitude > static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max()) + 1) {
      return std::nullopt;
    }
    return wire::Value(static_cast<std::int64_t>(-static_cast<__int128>(magnitude)));
  }
  if (magnitude <= static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max())) {
    return wire::Value(static_cast<std::int64_t>(magnitude));
  }
  return wire::Value(static_cast<std::uint64_t>(magnitude));
}

wire::Value ConstructFloat(std::string_view text) {
  std::string v = WithoutUnderscores(text);
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double sign = 1;
  if (!v.empty() && (v[0] == '-' || v[0] == '+')) {
    sign = v[0] == '-' ? -1 : 1;
    v.erase(0, 1);
  }
  if (v == ".inf") return wire::Value(sign * std::numeric_limits<double>::infinity());
  if (v == ".nan") return wire::Value(std::numeric_limits<double>::quiet_NaN());
  if (v.find(':') != std::string::npos) {
    double value = 0;
    std::size_t start = 0;
    for (;;) {
      std::size_t colon = v.find(':', start);
      value = value * 60 + std::strtod(v.substr(start, colon - start).c_str(), nullptr);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    return wire::Value(sign * value);
  }
  return wire::Value(sign * std::strtod(v.c_str(), nullptr));
}

// nullopt: PyYAML + Salt's loader would raise, or produce a type yamlify_arg does not keep.
std::optional<wire::Value> PlainScalar(const std::string& text) {
  if (FullMatch(text, NullRe())) return wire::Value();
  if (FullMatch(text, BoolRe())) {
    const char c = text[0];
    return wire::Value(c == 'y' || c == 'Y' || c == 't' || c == 'T' ||
                       ((c == 'o' || c == 'O') && (text[1] == 'n' || text[1] == 'N')));
  }
  if (FullMatch(text, IntRe())) return ConstructInt(text);
  if (FullMatch(text, FloatRe())) return ConstructFloat(text);
  return wire::Value(text);  // timestamps included: Salt's loader keeps them as strings
}

// A key as Python's dict compares it, where Salt's loader looks for a repeated key: bool, int
// and float are one kind of number (True == 1 == 1.0, 0 == -0.0), and every .nan PyYAML makes
// is one shared object, so each equals the others. Checked against Salt's yamlify_arg
// (tests/data/salt/cli_vectors.json): {1: a, true: b} stays the word it was.
struct NumberKey {
  bool nan = false;
  bool integral = false;
  bool negative = false;
  std::uint64_t magnitude = 0;  // integral
  double value = 0;             // neither: a fraction or an infinity
  bool operator==(const NumberKey&) const = default;
};
std::optional<NumberKey> AsNumber(const wire::Value& v) {
  NumberKey k;
  if (v.is_bool()) {
    k.integral = true;
    k.magnitude = *v.boolean() ? 1 : 0;
  } else if (v.is_int()) {
    k.integral = true;
    if (const auto n = v.int64()) {
      k.negative = *n < 0;
      k.magnitude =
          k.negative ? 0 - static_cast<std::uint64_t>(*n) : static_cast<std::uint64_t>(*n);
    } else {
      k.magnitude = *v.uint64();
    }
  } else if (v.is_float()) {
    const double d = *v.float64();
    if (std::isnan(d)) {
      k.nan = true;
    } else if (d == std::trunc(d) && std::fabs(d) < 18446744073709551616.0) {  // below 2^64
      k.integral = true;
      k.negative = d < 0;
      k.magnitude = static_cast<std::uint64_t>(std::fabs(d));
    } else {
      k.value = d;
    }
  } else {
    return std::nullopt;
  }
  return k;
}

// The keys of a map being built, by their index in it, for a hash set with Python's equality.
struct KeyHash {
  const wire::Map* map;
  std::size_t operator()(std::size_t i) const {
    const wire::Value& v = (*map)[i].first;
    if (const std::string* s = v.str()) return std::hash<std::string_view>{}(*s);
    if (const auto n = AsNumber(v)) {
      if (n->nan) return 7;
      if (n->integral) return std::hash<std::uint64_t>{}(n->magnitude) ^ (n->negative ? 1 : 0);
      return std::hash<double>{}(n->value);
    }
    return 0;
  }
};
struct KeyEqual {
  const wire::Map* map;
  bool operator()(std::size_t a, std::size_t b) const {
    const wire::Value& x = (*map)[a].first;
    const wire::Value& y = (*map)[b].first;
    const auto nx = AsNumber(x), ny = AsNumber(y);
    if (nx || ny) return nx && ny && *nx == *ny;
    return x == y;
  }
};

std::optional<wire::Value> Convert(const YAML::Node& node, int depth) {
  if (depth > kMaxDepth) return std::nullopt;
  const std::string& tag = node.Tag();
  if (node.IsNull()) {
    if (tag == "!") return wire::Value(std::string());  // "!" alone: an empty string
    return wire::Value();
  }
  if (node.IsScalar()) {
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return wire::Value(node.Scalar());
    if (tag == "?" || tag.empty()) return PlainScalar(node.Scalar());
    if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
        tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null") {
      std::optional<wire::Value> v = PlainScalar(node.Scalar());
      if (!v) return std::nullopt;
      const bool fits = (tag.ends_with("int") && v->is_int()) ||
                        (tag.ends_with("float") && (v->is_float() || v->is_int())) ||
                        (tag.ends_with("bool") && v->is_bool()) ||
                        (tag.ends_with("null") && v->is_nil());
      if (!fits) return std::nullopt;
      if (tag.ends_with("float") && v->is_int()) return wire::Value(*v->float64());
      return v;
    }
    return std::nullopt;  // an unknown tag: safe_load refuses it
  }
  if (tag != "?" && tag != "!" && !tag.empty() && tag != "tag:yaml.org,2002:seq" &&
      tag != "tag:yaml.org,2002:map") {
    return std::nullopt;
  }
  if (node.IsSequence()) {
    wire::Array out;
    for (const auto& item : node) {
      auto v = Convert(item, depth + 1);
      if (!v) return std::nullopt;
      out.push_back(std::move(*v));
    }
    return wire::Value(std::move(out));
  }
  if (node.IsMap()) {
    wire::Map out;
    std::unordered_set<std::size_t, KeyHash, KeyEqual> seen(node.size(), KeyHash{&out},
                                                            KeyEqual{&out});
    for (const auto& item : node) {
      auto k = Convert(item.first, depth + 1);
      auto v = Convert(item.second, depth + 1);
      if (!k || !v || k->is_map() || k->is_array()) return std::nullopt;
      out.emplace_back(std::move(*k), std::move(*v));
      // Salt's loader refuses duplicate keys. A hash set, not a search of the keys before:
      // a form's arg of 10,000 keys took 12.5 s, before any login (docs/security.md, 11).
      if (!seen.insert(out.size() - 1).second) return std::nullopt;
    }
    return wire::Value(std::move(out));
  }
  return std::nullopt;
}

std::optional<wire::Value> SafeLoad(std::string_view text) {
  // A '%' line is a directive, which needs a "---" line after it: in one word PyYAML refuses
  // it, where yaml-cpp reads an empty document.
  if (!text.empty() && text.front() == '%') return std::nullopt;
  auto node = config::ParseYaml(text);
  if (!node.ok()) return std::nullopt;
  return Convert(*node, 0);
}

std::string_view Strip(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  std::size_t a = s.find_first_not_of(ws);
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(ws) - a + 1);
}

bool IsWordChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || u >= 0x80;  // non-ASCII: Python's \w is Unicode
}

}  // namespace

wire::Value YamlifyArg(std::string_view arg) {
  const std::string original(arg);
  const std::string_view stripped = Strip(arg);
  if (stripped.empty() || stripped == "---" || stripped == "...") return wire::Value(original);
  if (arg.find('_') != std::string_view::npos &&
      stripped.find_first_not_of("0123456789_") == std::string_view::npos) {
    return wire::Value(original);
  }
  if (arg.find_first_of("\t\r\n") != std::string_view::npos) return wire::Value(original);
  if (arg.find('#') != std::string_view::npos) {
    std::optional<wire::Value> parsed = SafeLoad(arg);
    if (!parsed || parsed->is_str() || parsed->is_nil()) return wire::Value(original);
    return *parsed;
  }
  if (arg == "None") return wire::Value();
  std::optional<wire::Value> parsed = SafeLoad(arg);
  if (!parsed) return wire::Value(original);
  if (parsed->is_map()) return arg.front() == '{' ? *parsed : wire::Value(original);
  if (parsed->is_array()) return arg.front() == '[' ? *parsed : wire::Value(original);
  if (parsed->is_str() && parsed->str()->empty() && (arg == "|" || arg == "!")) {
    return wire::Value(original);
  }
  if (parsed->is_nil() && arg == "!") return wire::Value(original);
  return *parsed;
}

std::pair<std::string, std::string> SplitKwarg(std::string_view word) {
  const std::size_t eq = word.find('=');
  if (eq == std::string_view::npos || eq == 0) return {};
  const char first = word[0];
  if (std::isdigit(static_cast<unsigned char>(first)) || !IsWordChar(first)) return {};
  for (std::size_t i = 1; i < eq; ++i) {
    if (!IsWordChar(word[i]) && word[i] != '.' && word[i] != '-') return {};
  }
  std::string_view value = word.substr(eq + 1);
  if (!value.empty() && value.front() == '=') return {};
  if (value.ends_with('\n')) value.remove_suffix(1);  // Python's '$' before a final newline
  if (value.find('\n') != std::string_view::npos) return {};
  return {std::string(word.substr(0, eq)), std::string(value)};
}

namespace {

// Kwargs are set as a dict assigns (the last value wins, in the first one's place) through a
// KeyedMap: the words come from salt-api callers and from minions' peer publishes
// (docs/security.md, finding 14).
wire::Array WithKwargs(wire::Array out, wire::KeyedMap keyed) {
  wire::Map kwargs = std::move(keyed).Take();
  if (!kwargs.empty()) {
    wire::Map conditioned;
    conditioned.emplace_back(wire::Value("__kwarg__"), wire::Value(true));
    for (auto& kv : kwargs) conditioned.push_back(std::move(kv));
    out.push_back(wire::Value(std::move(conditioned)));
  }
  return out;
}

}  // namespace

wire::Array ParseInputValues(const wire::Array& args,
                             const std::set<std::string, std::less<>>& no_parse) {
  wire::Array out;
  wire::KeyedMap kwargs;
  for (const wire::Value& arg : args) {
    if (const std::string* word = arg.str()) {
      auto [name, value] = SplitKwarg(*word);
      if (name.empty()) {
        out.push_back(arg);
      } else {
        kwargs.Set(name, no_parse.contains(name) ? wire::Value(value) : YamlifyArg(value));
      }
    } else if (const wire::Value* flag = arg.Find("__kwarg__");
               arg.is_map() && flag && flag->is_bool() && *flag->boolean()) {
      for (const auto& [k, v] : *arg.map()) {
        if (k.str() && *k.str() != "__kwarg__") kwargs.Set(*k.str(), v);
      }
    } else {
      out.push_back(arg);
    }
  }
  return WithKwargs(std::move(out), std::move(kwargs));
}

wire::Array ParseCliArgs(const std::vector<std::string>& args,
                         const std::set<std::string, std::less<>>& no_parse) {
  wire::Array out;
  wire::KeyedMap kwargs;
  for (const auto& word : args) {
    auto [name, value] = SplitKwarg(word);
    if (name.empty()) {
      out.push_back(YamlifyArg(word));
      continue;
    }
    kwargs.Set(name, no_parse.contains(name) ? wire::Value(value) : YamlifyArg(value));
  }
  return WithKwargs(std::move(out), std::move(kwargs));
}

}  // namespace halite::client
