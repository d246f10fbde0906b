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

// A grain or pillar expression. Unknown data matches only a greedy (master-side) check.
Result<bool> DataMatch(const std::string& expr, const Value* data, const TargetContext& ctx,
                       std::string_view delimiter, SubdictMode mode, std::string_view what) {
  if (data == nullptr) return ctx.greedy;
  if (expr.find(delimiter) == std::string::npos) {
    return Error::InvalidArgument(std::string(what) + " target '" + expr + "' has no '" +
                                  std::string(delimiter) + "'");
  }
  if (!data->is_map()) return false;
  return SubdictMatch(*data, expr, delimiter, mode, ctx.subdict_work_budget);
}

Result<bool> IpCidr(const std::string& expr, const TargetContext& ctx) {
  if (ctx.grains == nullptr) return ctx.greedy;
  return IpCidrMatch(expr, *ctx.grains);
}

// Compound: tokens separated by spaces; Python precedence not > and > or.
class CompoundParser {
 public:
  // `pillar_exact`: Salt's compound_pillar_exact, where I@ and J@ compare pillar values
  // exactly (what the master uses for a minion's mine_get).
  CompoundParser(const std::vector<std::string>& tokens, const TargetContext& ctx,
                 bool pillar_exact)
      : tokens_(tokens), ctx_(ctx), pillar_exact_(pillar_exact) {}

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
    if (ctx_.cpu_budget != nullptr) {
      HALITE_RETURN_IF_ERROR(ctx_.cpu_budget->Check("compound target"));
    }
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
    // "X@pattern", or "X<delimiter>@pattern" for the data matchers (Salt's TARGET_REX).
    std::string_view delimiter = ctx_.delimiter;
    std::size_t at = std::string::npos;
    if (t.size() > 2 && t[1] == '@') {
      at = 1;
    } else if (t.size() > 3 && t[2] == '@' && std::string_view("GPIJ").find(t[0]) != t.npos) {
      at = 2;
      delimiter = std::string_view(t).substr(1, 1);
    }
    if (at != std::string::npos) {
      std::string rest = t.substr(at + 1);
      switch (t[0]) {
        case 'G':
          return DataMatch(rest, ctx_.grains, ctx_, delimiter, SubdictMode::kGlob, "grain");
        case 'P':
          return DataMatch(rest, ctx_.grains, ctx_, delimiter, SubdictMode::kRegex, "grain");
        case 'I':
          return DataMatch(rest, ctx_.pillar, ctx_, delimiter,
                           pillar_exact_ ? SubdictMode::kExact : SubdictMode::kGlob, "pillar");
        case 'J':
          return DataMatch(rest, ctx_.pillar, ctx_, delimiter,
                           pillar_exact_ ? SubdictMode::kExact : SubdictMode::kRegex, "pillar");
        case 'S':
          return IpCidr(rest, ctx_);
        case 'E':
          return RegexMatch(rest, ctx_.id);
        case 'L': {
          for (const auto& item : SplitListImpl(Value(rest))) {
            if (item == ctx_.id) return true;
          }
          return false;
        }
        case 'N':
          return Error::InvalidArgument("nodegroup term '" + t +
                                        "' must stand alone, separated by spaces");
        case 'R':
          return Error::InvalidArgument("compound matcher 'R@' (range) is not supported");
        default:
          return Error::InvalidArgument("unknown compound matcher '" + t.substr(0, at + 1) + "'");
      }
    }
    return GlobMatch(t, ctx_.id);
  }

  const std::vector<std::string>& tokens_;
  const TargetContext& ctx_;
  const bool pillar_exact_;
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
    return DataMatch(*text, ctx.grains, ctx, ctx.delimiter,
                     tgt_type == "grain" ? SubdictMode::kGlob : SubdictMode::kRegex, "grain");
  }
  if (tgt_type == "pillar" || tgt_type == "pillar_pcre" || tgt_type == "pillar_exact") {
    if (!text) return Error::InvalidArgument("pillar target must be a string");
    const SubdictMode mode = tgt_type == "pillar"        ? SubdictMode::kGlob
                             : tgt_type == "pillar_pcre" ? SubdictMode::kRegex
                                                         : SubdictMode::kExact;
    return DataMatch(*text, ctx.pillar, ctx, ctx.delimiter, mode, "pillar");
  }
  if (tgt_type == "ipcidr") {
    if (!text) return Error::InvalidArgument("ipcidr target must be a string");
    return IpCidr(*text, ctx);
  }
  if (tgt_type == "nodegroup" || tgt_type == "compound" || tgt_type == "compound_pillar_exact") {
    if (!text) return Error::InvalidArgument(std::string(tgt_type) + " target must be a string");
    if (text->size() > kMaxCompoundBytes) {
      return Error::ResourceExhausted(
          std::string(tgt_type) + " target of " + std::to_string(text->size()) +
          " bytes exceeds the limit of " + std::to_string(kMaxCompoundBytes));
    }
    std::string expanded;
    const std::string* expr = text;
    if (tgt_type == "nodegroup" || text->find("N@") != std::string::npos) {
      static const Nodegroups kNone;
      const Nodegroups& groups = ctx.nodegroups != nullptr ? *ctx.nodegroups : kNone;
      HALITE_ASSIGN_OR_RETURN(expanded, tgt_type == "nodegroup"
                                            ? ExpandNodegroup(*text, groups)
                                            : ExpandCompoundNodegroups(*text, groups));
      if (expanded.size() > kMaxCompoundBytes) {
        return Error::ResourceExhausted("nodegroup expansion exceeds " +
                                        std::to_string(kMaxCompoundBytes) + " bytes");
      }
      expr = &expanded;
    }
    return CompoundParser(TokenizeCompoundCached(*expr), ctx, tgt_type == "compound_pillar_exact")
        .Parse();
  }
  return Error::InvalidArgument("unsupported target type '" + std::string(tgt_type) + "'");
}

}  // namespace halite::wire
