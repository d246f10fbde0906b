// A fresh directory under the temp dir for one test, removed with its contents (even ones the
// test made unreadable) on destruction.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "halite/common/check.h"

namespace halite::testing {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix = "halite-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    const char* made = ::mkdtemp(pattern.data());
    HALITE_CHECK(made != nullptr) << "mkdtemp " << pattern;
    path_ = made;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace halite::testing
