#include "halite/wire/target.h"

#include <optional>
#include <vector>

#include "halite/wire/regex.h"

namespace halite::wire {

namespace {

// Salt uses re.match: anchored at the start; a full-string anchor is not required.
Result<bool> RegexMatch(const std::string& pattern, std::string_view text) {
  HALITE_ASSIGN_OR_RETURN(Regex re, CompileRegexCached(pattern));
  return re.Match(text, RegexAnchor::kStart);
}

std::vector<std::string> SplitListImpl(const Value& tgt) {
  std::vector<std::string> out;
  if (const Array* a = tgt.array()) {
    for (const Value& v : *a) {
      if (const std::string* s = v.str()) out.push_back(*s);
    }
    return out;
  }
  if (const std::string* s = tgt.str()) {
    std::size_t start = 0;
    while (start <= s->size()) {
      std::size_t comma = s->find(',', start);
      if (comma == std::string::npos) comma = s->size();
      std::string item = s->substr(start, comma - start);
      // strip spaces
      while (!item.empty() && item.front() == ' ') item.erase(item.begin());
      while (!item.empty() && item.back() == ' ') item.pop_back();
      if (!item.empty()) out.push_back(item);
      start = comma + 1;
    }
  }
  return out;
}

// Does `value` (a grain value) match `pattern`? Lists match if any element does; maps match
// when the pattern names a key.
Result<bool> ValueMatches(const Value& value, const std::string& pattern, bool regex) {
  if (const Array* a = value.array()) {
    for (const Value& e : *a) {
      HALITE_ASSIGN_OR_RETURN(bool m, ValueMatches(e, pattern, regex));
      if (m) return true;
    }
    return false;
  }
  if (value.is_map()) return value.Find(pattern) != nullptr;
  std::string text = ScalarToString(value);
  if (regex) return RegexMatch(pattern, text);
  return GlobMatch(pattern, text);
}

// Salt's subdict_match: try every split point of `expr` at the delimiter: the left part is a
// key path into the grains, the right part the value pattern.
Result<bool> GrainMatch(const std::string& expr, const TargetContext& ctx, bool regex) {
  if (ctx.grains == nullptr || !ctx.grains->is_map()) return ctx.greedy;
  const std::string delim(ctx.delimiter);
  if (expr.find(delim) == std::string::npos) {
    return Error::InvalidArgument("grain target '" + expr + "' has no '" + delim + "'");
  }
  std::size_t pos = expr.find(delim);
  while (pos != std::string::npos) {
    std::string key_path = expr.substr(0, pos);
    std::string pattern = expr.substr(pos + delim.size());
    const Value* node = ctx.grains;
    std::size_t start = 0;
    while (node != nullptr) {
      std::size_t next = key_path.find(delim, start);
      std::string key =
          key_path.substr(start, next == std::string::npos ? std::string::npos : next - start);
      node = node->Find(key);
      if (next == std::string::npos) break;
      start = next + delim.size();
    }
    if (node != nullptr) {
      HALITE_ASSIGN_OR_RETURN(bool m, ValueMatches(*node, pattern, regex));
      if (m) return true;
    }
    pos = expr.find(delim, pos + delim.size());
  }
  return false;
}

// Compound: tokens separated by spaces; Python precedence not > and > or.
class CompoundParser {
 public:
  CompoundParser(const std::vector<std::string>& tokens, const TargetContext& ctx)
      : tokens_(tokens), ctx_(ctx) {}

  Result<bool> Parse() {
    if (tokens_.empty()) return Error::InvalidArgument("empty compound target");
    if (tokens_.size() > kMaxCompoundTokens) {
      return Error::ResourceExhausted("compound target of " + std::to_string(tokens_.size()) +
                                      " terms exceeds the limit of " +
                                      std::to_string(kMaxCompoundTokens));
    }
    HALITE_ASSIGN_OR_RETURN(bool v, Or());
    if (pos_ != tokens_.size()) {
      return Error::InvalidArgument("unexpected '" + tokens_[pos_] + "' in compound target");
    }
    return v;
  }

 private:
  bool Peek(std::string_view t) const { return pos_ < tokens_.size() && tokens_[pos_] == t; }

  Result<bool> Or() {
    HALITE_ASSIGN_OR_RETURN(bool v, And());
    while (Peek("or")) {
      ++pos_;
      HALITE_ASSIGN_OR_RETURN(bool r, And());
      v = v || r;
    }
    return v;
  }

  Result<bool> And() {
    HALITE_ASSIGN_OR_RETURN(bool v, Not());
    for (;;) {
      if (Peek("and")) {
        ++pos_;
      } else if (pos_ < tokens_.size() && !Peek("or") && !Peek(")")) {
        // Salt inserts an implicit "and" between adjacent terms.
      } else {
        break;
      }
      HALITE_ASSIGN_OR_RETURN(bool r, Not());
      v = v && r;
    }
    return v;
  }

  // One level of '(' or 'not' while its operand is parsed. The parser recurses once per
  // level, so kMaxCompoundNesting bounds its stack.
  class Nest {
   public:
    explicit Nest(std::size_t& depth) : depth_(++depth) {}
    ~Nest() { --depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
    bool too_deep() const { return depth_ > kMaxCompoundNesting; }

   private:
    std::size_t& depth_;
  };

  static Error TooDeep() {
    return Error::ResourceExhausted("compound target nests '(' and 'not' deeper than " +
                                    std::to_string(kMaxCompoundNesting));
  }

  Result<bool> Not() {
    if (Peek("not")) {
      ++pos_;
      Nest nest(depth_);
      if (nest.too_deep()) return TooDeep();
      HALITE_ASSIGN_OR_RETURN(bool v, Not());
      return !v;
    }
    return Atom();
  }

  Result<bool> Atom() {
    if (pos_ >= tokens_.size()) return Error::InvalidArgument("compound target ends early");
    if (Peek("(")) {
      ++pos_;
      Nest nest(depth_);
      if (nest.too_deep()) return TooDeep();
      HALITE_ASSIGN_OR_RETURN(bool v, Or());
      if (!Peek(")")) return Error::InvalidArgument("missing ')' in compound target");
      ++pos_;
      return v;
    }
    const std::string& t = tokens_[pos_++];
    if (t == "and" || t == "or" || t == ")") {
      return Error::InvalidArgument("unexpected '" + t + "' in compound target");
    }
    if (t.size() > 2 && t[1] == '@') {
      std::string rest = t.substr(2);
      switch (t[0]) {
        case 'G':
          return GrainMatch(rest, ctx_, false);
        case 'P':
          return GrainMatch(rest, ctx_, true);
        case 'E':
          return RegexMatch(rest, ctx_.id);
        case 'L': {
          for (const auto& item : SplitListImpl(Value(rest))) {
            if (item == ctx_.id) return true;
          }
          return false;
        }
        case 'I':
        case 'J':
        case 'S':
        case 'R':
        case 'N':
          return Error::InvalidArgument(std::string("compound matcher '") + t[0] +
                                        "@' is not supported by halite yet");
        default:
          return Error::InvalidArgument("unknown compound matcher '" + t.substr(0, 2) + "'");
      }
    }
    return GlobMatch(t, ctx_.id);
  }

  const std::vector<std::string>& tokens_;
  const TargetContext& ctx_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
};

std::vector<std::string> TokenizeCompound(const std::string& expr) {
  std::vector<std::string> tokens;
  std::string current;
  bool current_has_at = false;  // a matcher term ("E@(a|b)") keeps its parentheses
  auto flush = [&] {
    if (!current.empty()) tokens.push_back(std::move(current));
    current.clear();
    current_has_at = false;
  };
  for (char c : expr) {
    if (c == ' ' || c == '\t' || c == '\n') {
      flush();
    } else if ((c == '(' || c == ')') && !current_has_at) {
      flush();
      tokens.emplace_back(1, c);
    } else {
      current.push_back(c);
      current_has_at = current_has_at || c == '@';
    }
  }
  flush();
  return tokens;
}

// The master evaluates one expression against every minion: keep the last tokenization per
// thread instead of re-tokenizing up to kMaxCompoundBytes per minion. The reference is valid
// until the next call on this thread; the parser does not call back into MatchTarget.
const std::vector<std::string>& TokenizeCompoundCached(const std::string& expr) {
  thread_local std::optional<std::string> last_expr;
  thread_local std::vector<std::string> last_tokens;
  if (!last_expr || *last_expr != expr) {
    last_tokens = TokenizeCompound(expr);
    last_expr = expr;
  }
  return last_tokens;
}

}  // namespace

std::vector<std::string> TargetListItems(const Value& tgt) { return SplitListImpl(tgt); }

std::string ScalarToString(const Value& v) {
  if (const std::string* s = v.str()) return *s;
  if (auto b = v.boolean()) return *b ? "True" : "False";
  if (v.is_nil()) return "None";
  if (auto i = v.int64()) return std::to_string(*i);
  if (auto u = v.uint64()) return std::to_string(*u);
  if (v.is_float()) {
    // Python's repr: shortest round-trip form, always with a decimal point or exponent.
    std::string text = Value::MapOf({{"x", v}}).ToJson();
    return text.substr(6, text.size() - 7);
  }
  return v.ToJson();
}

Result<bool> MatchTarget(const Value& tgt, std::string_view tgt_type, const TargetContext& ctx) {
  const std::string* text = tgt.str();
  if (tgt_type.empty() || tgt_type == "glob") {
    if (!text) return Error::InvalidArgument("glob target must be a string");
    return GlobMatch(*text, ctx.id);
  }
  if (tgt_type == "pcre") {
    if (!text) return Error::InvalidArgument("pcre target must be a string");
    return RegexMatch(*text, ctx.id);
  }
  if (tgt_type == "list") {
    for (const auto& item : SplitListImpl(tgt)) {
      if (item == ctx.id) return true;
    }
    return false;
  }
  if (tgt_type == "grain" || tgt_type == "grain_pcre") {
    if (!text) return Error::InvalidArgument("grain target must be a string");
    return GrainMatch(*text, ctx, tgt_type == "grain_pcre");
  }
  if (tgt_type == "compound") {
    if (!text) return Error::InvalidArgument("compound target must be a string");
    if (text->size() > kMaxCompoundBytes) {
      return Error::ResourceExhausted("compound target of " + std::to_string(text->size()) +
                                      " bytes exceeds the limit of " +
                                      std::to_string(kMaxCompoundBytes));
    }
    return CompoundParser(TokenizeCompoundCached(*text), ctx).Parse();
  }
  return Error::InvalidArgument("unsupported target type '" + std::string(tgt_type) + "'");
}

}  // namespace halite::wire
