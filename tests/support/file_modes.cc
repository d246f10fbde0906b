#include "file_modes.h"

#include <cstdio>

namespace halite::testing {

namespace fs = std::filesystem;

std::vector<std::string> GroupOrOtherAccessible(const fs::path& root) {
  std::vector<std::string> offenders;
  auto check = [&](const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return;
    if ((st.st_mode & 077) == 0) return;
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    const char* type = S_ISDIR(st.st_mode) ? "dir" : S_ISSOCK(st.st_mode) ? "socket" : "file";
    offenders.push_back(path.string() + " " + mode + " " + type);
  };
  std::error_code ec;
  if (!fs::exists(root, ec)) return {root.string() + " is missing"};
  check(root);
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    check(it->path());
  }
  return offenders;
}

}  // namespace halite::testing
