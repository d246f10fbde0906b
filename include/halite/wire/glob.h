// Python's fnmatch.fnmatchcase, which Salt uses for glob targets and expr_match: '*' any run
// of characters (including '/' and newlines), '?' one character, '[seq]' / '[!seq]' a set or
// its complement ('^' is literal, ']' first in the set is a member, ranges with a high end
// below the low end are dropped), a '[' without a closing ']' is literal, and '\' is literal
// (no escapes). Case-sensitive. Characters are code points of the UTF-8 text; a byte that is
// not valid UTF-8 is a character of its own. O(len(pattern) * len(text)) in the worst case,
// no recursion. Thread-safe.
#pragma once

#include <memory>
#include <string_view>

namespace halite::wire {

bool GlobMatch(std::string_view pattern, std::string_view text);

// A pattern compiled once, for matching it against many texts (GlobMatch compiles it on
// every call). Same answers as GlobMatch.
class Glob {
 public:
  explicit Glob(std::string_view pattern);
  ~Glob();
  Glob(Glob&&) noexcept;
  Glob& operator=(Glob&&) noexcept;

  bool Match(std::string_view text) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace halite::wire
