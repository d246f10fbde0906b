// File-mode checks shared by the tests that prove the master writes private files (issue 12,
// finding 8): the job cache's own test and the real master's.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

namespace halite::testing {

// Every entry under `root` (itself included) that lets the group or others in: a file (or
// socket) with any group/other bit, a directory the group or others may list or enter.
// Symbolic links are skipped (their mode means nothing). One "path mode type" line each; a
// missing `root` is one line saying so.
std::vector<std::string> GroupOrOtherAccessible(const std::filesystem::path& root);

// Sets the process umask for its lifetime (children forked meanwhile inherit it).
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : saved_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(saved_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  const mode_t saved_;
};

}  // namespace halite::testing
