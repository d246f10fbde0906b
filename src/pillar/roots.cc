// Sls files under a saltenv's roots (src/pillar/roots.h).
#include "roots.h"

#include <algorithm>
#include <filesystem>

namespace halite::pillar {

namespace fs = std::filesystem;

std::string SlsToPath(const std::string& sls) {
  std::string rel = sls;
  std::replace(rel.begin(), rel.end(), '.', '/');
  return rel;
}

bool SafeRelative(const std::string& rel) {
  if (rel.empty() || rel[0] == '/') return false;
  for (const auto& part : fs::path(rel)) {
    if (part == "..") return false;
  }
  return true;
}

const std::vector<std::string>* RootsOf(const Roots& roots, const std::string& env) {
  for (const auto& [name, dirs] : roots) {
    if (name == env) return &dirs;
  }
  return nullptr;
}

std::optional<Found> FindSls(const std::vector<std::string>& dirs, const std::string& sls) {
  const std::string rel = SlsToPath(sls);
  if (!SafeRelative(rel)) return std::nullopt;
  std::error_code ec;
  for (const auto& d : dirs) {
    fs::path p = fs::path(d) / (rel + ".sls");
    if (fs::is_regular_file(p, ec)) return Found{p.string(), false};
  }
  for (const auto& d : dirs) {
    fs::path p = fs::path(d) / rel / "init.sls";
    if (fs::is_regular_file(p, ec)) return Found{p.string(), true};
  }
  return std::nullopt;
}

std::optional<std::string> FindFile(const std::vector<std::string>& dirs, const std::string& rel) {
  std::error_code ec;
  for (const auto& d : dirs) {
    fs::path p = fs::path(d) / rel;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return std::nullopt;
}

std::vector<std::string> ListStates(const std::vector<std::string>& dirs) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& d : dirs) {
    const fs::path root(d);
    for (fs::recursive_directory_iterator
             it(root, fs::directory_options::skip_permission_denied, ec),
         end;
         !ec && it != end; it.increment(ec)) {
      if (it.depth() > 32) {
        it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file(ec) || it->path().extension() != ".sls") continue;
      fs::path rel = it->path().lexically_relative(root);
      std::string s = rel.string();
      s.resize(s.size() - 4);
      if (rel.filename() == "init.sls") {
        s = rel.parent_path().string();
        if (s.empty()) continue;
      }
      std::replace(s.begin(), s.end(), '/', '.');
      names.insert(s);
    }
  }
  return {names.begin(), names.end()};
}

}  // namespace halite::pillar
