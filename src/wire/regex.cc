#include "halite/wire/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace halite::wire {

struct Regex::Compiled {
  Compiled() = default;
  Compiled(const Compiled&) = delete;
  Compiled& operator=(const Compiled&) = delete;
  ~Compiled() {
    pcre2_match_context_free(match_context);
    pcre2_code_free(code);
  }
  std::string pattern;
  std::size_t max_text_bytes = 0;
  pcre2_code* code = nullptr;
  pcre2_match_context* match_context = nullptr;
};

namespace {

// A pattern quoted for an error message, cut so that a 4 KiB pattern does not flood a log.
std::string Quoted(std::string_view pattern) {
  constexpr std::size_t kShown = 80;
  if (pattern.size() <= kShown) return "'" + std::string(pattern) + "'";
  return "'" + std::string(pattern.substr(0, kShown)) + "...' (" + std::to_string(pattern.size()) +
         " bytes)";
}

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(code, buffer, sizeof buffer);
  if (n < 0) return "PCRE2 error " + std::to_string(code);
  return std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
}

// Python's \Z (the very end) is PCRE2's \z; PCRE2's \Z also allows a final newline.
std::string TranslatePython(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size());
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      out.push_back('\\');
      out.push_back(pattern[i + 1] == 'Z' ? 'z' : pattern[i + 1]);
      ++i;
    } else {
      out.push_back(pattern[i]);
    }
  }
  return out;
}

struct CacheEntry {
  std::string pattern;
  Result<Regex> regex;
};

struct RegexCache {
  static constexpr std::size_t kCapacity = 64;
  std::vector<CacheEntry> entries;  // most recently used last
  std::size_t misses = 0;
};

RegexCache& ThreadCache() {
  thread_local RegexCache cache;
  return cache;
}

}  // namespace

Result<Regex> Regex::Compile(std::string_view pattern, const RegexLimits& limits) {
  if (pattern.size() > limits.max_pattern_bytes) {
    return Error::InvalidArgument("regular expression of " + std::to_string(pattern.size()) +
                                  " bytes is longer than the limit of " +
                                  std::to_string(limits.max_pattern_bytes));
  }
  const std::string translated = TranslatePython(pattern);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // MATCH_INVALID_UTF implies UTF and lets a subject with invalid UTF-8 be matched: such bytes
  // match nothing instead of failing the whole match.
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_MATCH_INVALID_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    return Error::InvalidArgument("bad regular expression " + Quoted(pattern) + " at offset " +
                                  std::to_string(error_offset) + ": " + Pcre2Message(error_code));
  }
  auto compiled = std::make_shared<Compiled>();
  compiled->pattern = std::string(pattern);
  compiled->max_text_bytes = limits.max_text_bytes;
  compiled->code = code;
  compiled->match_context = pcre2_match_context_create(nullptr);
  if (compiled->match_context == nullptr) return Error::Internal("pcre2: out of memory");
  pcre2_set_match_limit(compiled->match_context, limits.match_limit);
  pcre2_set_depth_limit(compiled->match_context, limits.depth_limit);
  pcre2_set_heap_limit(compiled->match_context, limits.heap_limit_kib);
  return Regex(std::move(compiled));
}

Result<bool> Regex::Match(std::string_view text, RegexAnchor anchor) const {
  if (text.size() > compiled_->max_text_bytes) return false;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create(1, nullptr), &pcre2_match_data_free);
  if (data == nullptr) return Error::Internal("pcre2: out of memory");
  std::uint32_t options = PCRE2_ANCHORED;
  if (anchor == RegexAnchor::kFull) options |= PCRE2_ENDANCHORED;
  const int rc = pcre2_match(compiled_->code, reinterpret_cast<PCRE2_SPTR>(text.data()),
                             text.size(), 0, options, data.get(), compiled_->match_context);
  if (rc >= 0) return true;  // 0: matched, with more groups than the one-pair ovector
  switch (rc) {
    case PCRE2_ERROR_NOMATCH:
      return false;
    case PCRE2_ERROR_MATCHLIMIT:
    case PCRE2_ERROR_DEPTHLIMIT:
    case PCRE2_ERROR_HEAPLIMIT:
    case PCRE2_ERROR_NOMEMORY:
      return Error::ResourceExhausted("regular expression " + Quoted(compiled_->pattern) +
                                      " gave up on a " + std::to_string(text.size()) +
                                      "-byte text: " + Pcre2Message(rc));
    default:
      return Error::Internal("regular expression " + Quoted(compiled_->pattern) + ": " +
                             Pcre2Message(rc));
  }
}

const std::string& Regex::pattern() const { return compiled_->pattern; }

Result<Regex> CompileRegexCached(std::string_view pattern) {
  RegexCache& cache = ThreadCache();
  auto it = std::find_if(cache.entries.begin(), cache.entries.end(),
                         [&](const CacheEntry& e) { return e.pattern == pattern; });
  if (it != cache.entries.end()) {
    std::rotate(it, it + 1, cache.entries.end());
    return cache.entries.back().regex;
  }
  ++cache.misses;
  if (cache.entries.size() >= RegexCache::kCapacity) cache.entries.erase(cache.entries.begin());
  cache.entries.push_back(CacheEntry{std::string(pattern), Regex::Compile(pattern)});
  return cache.entries.back().regex;
}

bool ReMatchOrFalse(std::string_view pattern, std::string_view text) {
  auto re = CompileRegexCached(pattern);
  if (!re.ok()) return false;
  auto m = re->Match(text, RegexAnchor::kStart);
  return m.ok() && *m;
}

std::size_t RegexCacheMissesForTest() { return ThreadCache().misses; }

}  // namespace halite::wire
