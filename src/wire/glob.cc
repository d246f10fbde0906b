// Python's fnmatch.fnmatchcase (Lib/fnmatch.py translate()), matched without a regex engine
// and without backtracking beyond the last '*': O(len(pattern) * len(text)) in the worst case.
#include "halite/wire/glob.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace halite::wire {
namespace {

// UTF-8 to code points as Python would see the str; a byte that is not part of a valid
// sequence becomes U+DC80..U+DCFF (surrogateescape), which no valid text can produce.
std::u32string DecodeUtf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    char32_t cp = 0;
    char32_t min = 0;
    if (c < 0x80) {
      len = 1;
      cp = c;
    } else if (c >= 0xc2 && c < 0xe0) {
      len = 2;
      cp = c & 0x1f;
      min = 0x80;
    } else if (c >= 0xe0 && c < 0xf0) {
      len = 3;
      cp = c & 0x0f;
      min = 0x800;
    } else if (c >= 0xf0 && c < 0xf5) {
      len = 4;
      cp = c & 0x07;
      min = 0x10000;
    }
    bool valid = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; valid && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      valid = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    valid = valid && cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    if (valid) {
      out.push_back(cp);
      i += len;
    } else {
      out.push_back(0xdc00 + c);
      ++i;
    }
  }
  return out;
}

struct CharClass {
  bool negated = false;
  std::u32string literals;
  std::vector<std::pair<char32_t, char32_t>> ranges;

  bool Matches(char32_t c) const {
    bool in = literals.find(c) != std::u32string::npos;
    for (std::size_t k = 0; !in && k < ranges.size(); ++k) {
      in = ranges[k].first <= c && c <= ranges[k].second;
    }
    return in != negated;
  }
};

struct Token {
  enum Kind : std::uint8_t { kLiteral, kAnyChar, kStar, kClass } kind = kLiteral;
  char32_t literal = 0;
  std::uint32_t class_index = 0;  // a pattern has fewer classes than bytes
};

// The set inside '[' ... ']' (`stuff` in translate(): the text between the brackets), split
// into chunks at the '-' of each range exactly as Python does, empty ranges dropped.
CharClass ParseClass(std::u32string_view stuff) {
  CharClass out;
  std::vector<std::u32string> chunks;
  if (stuff.find(U'-') == std::u32string_view::npos) {
    chunks.emplace_back(stuff);
  } else {
    std::size_t i = 0;
    std::size_t k = stuff.front() == U'!' ? 2 : 1;
    for (;;) {
      k = k < stuff.size() ? stuff.find(U'-', k) : std::u32string_view::npos;
      if (k == std::u32string_view::npos) break;
      chunks.emplace_back(stuff.substr(i, k - i));
      i = k + 1;
      k = k + 3;
    }
    std::u32string last(stuff.substr(i));
    if (!last.empty()) {
      chunks.push_back(std::move(last));
    } else {
      chunks.back().push_back(U'-');
    }
    for (std::size_t c = chunks.size() - 1; c > 0; --c) {
      if (chunks[c - 1].back() > chunks[c].front()) {
        chunks[c - 1].pop_back();
        chunks[c - 1] += chunks[c].substr(1);
        chunks.erase(chunks.begin() + static_cast<std::ptrdiff_t>(c));
      }
    }
  }
  if (!chunks.front().empty() && chunks.front().front() == U'!') {
    out.negated = true;
    chunks.front().erase(0, 1);
  }
  // Between chunk c-1 and chunk c lies the range (back of c-1, front of c); every other
  // character is a literal member.
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const std::u32string& chunk = chunks[c];
    const std::size_t first = c > 0 ? 1 : 0;
    // The first chunk is empty after a lone '!' ("[!-x]"): Python's "[^-x]" then reads the
    // '-' and the next chunk's first character as literals, not as a range (found by
    // target_fuzz: the range read before an empty string).
    const std::size_t end =
        c + 1 < chunks.size() && !chunk.empty() ? chunk.size() - 1 : chunk.size();
    for (std::size_t k = first; k < end; ++k) out.literals.push_back(chunk[k]);
    if (c > 0 && chunks[c - 1].empty()) {
      out.literals.push_back(U'-');
      out.literals.push_back(chunk.front());
    } else if (c > 0) {
      out.ranges.emplace_back(chunks[c - 1].back(), chunk.front());
    }
  }
  return out;
}

void Compile(const std::u32string& p, std::vector<Token>& tokens, std::vector<CharClass>& classes) {
  const std::size_t n = p.size();
  std::size_t i = 0;
  while (i < n) {
    const char32_t c = p[i++];
    if (c == U'*') {
      if (tokens.empty() || tokens.back().kind != Token::kStar) tokens.push_back({Token::kStar});
    } else if (c == U'?') {
      tokens.push_back({Token::kAnyChar});
    } else if (c == U'[') {
      std::size_t j = i;
      if (j < n && p[j] == U'!') ++j;
      if (j < n && p[j] == U']') ++j;
      while (j < n && p[j] != U']') ++j;
      if (j >= n) {
        tokens.push_back({Token::kLiteral, U'['});
      } else {
        classes.push_back(ParseClass(std::u32string_view(p).substr(i, j - i)));
        tokens.push_back({Token::kClass, 0, static_cast<std::uint32_t>(classes.size() - 1)});
        i = j + 1;
      }
    } else {
      tokens.push_back({Token::kLiteral, c});
    }
  }
}

}  // namespace

struct Glob::Compiled {
  std::vector<Token> tokens;
  std::vector<CharClass> classes;
};

Glob::Glob(std::string_view pattern) : compiled_(std::make_unique<Compiled>()) {
  const std::u32string p = DecodeUtf8(pattern);
  compiled_->tokens.reserve(p.size());  // at most one token per character: one allocation
  Compile(p, compiled_->tokens, compiled_->classes);
}

Glob::~Glob() = default;
Glob::Glob(Glob&&) noexcept = default;
Glob& Glob::operator=(Glob&&) noexcept = default;

bool Glob::Match(std::string_view text) const {
  const std::vector<Token>& tokens = compiled_->tokens;
  const std::vector<CharClass>& classes = compiled_->classes;
  const std::u32string t = DecodeUtf8(text);
  auto matches_one = [&](const Token& token, char32_t c) {
    switch (token.kind) {
      case Token::kLiteral:
        return token.literal == c;
      case Token::kAnyChar:
        return true;
      case Token::kClass:
        return classes[token.class_index].Matches(c);
      case Token::kStar:
        break;
    }
    return false;
  };
  // Every token but '*' takes exactly one character, so on a mismatch it is enough to let the
  // most recent '*' take one more character: earlier stars never need to be revisited.
  std::size_t p = 0;
  std::size_t i = 0;
  std::optional<std::size_t> star;
  std::size_t star_text = 0;
  while (i < t.size()) {
    if (p < tokens.size() && tokens[p].kind == Token::kStar) {
      star = p++;
      star_text = i;
    } else if (p < tokens.size() && matches_one(tokens[p], t[i])) {
      ++p;
      ++i;
    } else if (star) {
      p = *star + 1;
      i = ++star_text;
    } else {
      return false;
    }
  }
  while (p < tokens.size() && tokens[p].kind == Token::kStar) ++p;
  return p == tokens.size();
}

bool GlobMatch(std::string_view pattern, std::string_view text) {
  return Glob(pattern).Match(text);
}

}  // namespace halite::wire
