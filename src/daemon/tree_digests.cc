#include "halite/daemon/tree_digests.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>

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
      files[rel] = FileHash(it->path().string());
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

std::string TreeDigests::FileHash(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "unreadable";
  const std::int64_t mtime_ns =
      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  auto it = seen_.find(path);
  if (it != seen_.end() && it->second.size == static_cast<std::uint64_t>(st.st_size) &&
      it->second.mtime_ns == mtime_ns && it->second.ino == st.st_ino) {
    return it->second.sha256;
  }
  // Streamed: a large file (an ISO in file_roots) is never held in memory.
  std::ifstream in(path, std::ios::binary);
  if (!in) return "unreadable";
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!md || EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr) != 1) return "unreadable";
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0)
      EVP_DigestUpdate(md.get(), buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(md.get(), digest, &len) != 1) return "unreadable";
  Seen seen{static_cast<std::uint64_t>(st.st_size), mtime_ns, st.st_ino,
            wire::HexEncode(std::string_view(reinterpret_cast<const char*>(digest), len))};
  seen_[path] = seen;
  return seen.sha256;
}

}  // namespace halite::daemon
