#include "halite/daemon/tree_digests.h"

#include <filesystem>

#include "halite/wire/encoding.h"

namespace halite::daemon {

namespace fs = std::filesystem;

std::map<std::string, std::string> TreeDigests::Compute(const Roots& file_roots,
                                                        const Roots& pillar_roots) {
  std::map<std::string, std::string> out;
  for (const auto& [kind, roots] :
       {std::pair{"file_roots", &file_roots}, std::pair{"pillar_roots", &pillar_roots}}) {
    for (const auto& [env, dirs] : *roots) out[std::string(kind) + "/" + env] = Digest(dirs);
  }
  return out;
}

std::string TreeDigests::Digest(const std::vector<std::string>& roots) {
  std::map<std::string, std::string> files;  // relpath -> content hash; first root wins
  for (const std::string& root : roots) {
    std::error_code ec;
    fs::recursive_directory_iterator it(root,
                                        fs::directory_options::follow_directory_symlink |
                                            fs::directory_options::skip_permission_denied,
                                        ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.empty() && name.front() == '.') {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file(ec)) continue;
      const std::string rel = fs::relative(it->path(), root, ec).string();
      if (ec || files.count(rel) != 0) continue;
      auto hash = hashes_->Sha256(it->path());
      files[rel] = hash.ok() ? hash->sha256_hex : "unreadable";
    }
  }
  std::string text;
  for (const auto& [rel, hash] : files) {
    text += rel;
    text += '\0';
    text += hash;
    text += '\n';
  }
  return wire::Sha256Hex(text).substr(0, 16);
}

}  // namespace halite::daemon
