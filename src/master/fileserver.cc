#include "halite/master/fileserver.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "halite/wire/encoding.h"

namespace halite::master {

namespace {

constexpr std::size_t kFileBufferSize = 1048576;

std::string LoadStr(const wire::Value& load, std::string_view key, std::string fallback = {}) {
  const std::string* s = load.FindStr(key);
  return s ? *s : fallback;
}

// Splits "path?saltenv=x" and validates the relative path.
std::optional<std::string> CleanPath(std::string path, std::string& saltenv) {
  if (auto q = path.find('?'); q != std::string::npos) {
    std::string query = path.substr(q + 1);
    path.resize(q);
    if (query.rfind("saltenv=", 0) == 0) saltenv = query.substr(8);
  }
  if (path.rfind("salt://", 0) == 0) path = path.substr(7);
  if (path.empty() || path[0] == '/') return std::nullopt;
  std::filesystem::path p(path);
  for (const auto& part : p) {
    if (part == "..") return std::nullopt;
  }
  return path;
}

const std::vector<std::string>* Roots(const config::MasterConfig& config, const std::string& env) {
  auto it = config.file_roots.find(env);
  return it == config.file_roots.end() ? nullptr : &it->second;
}

// The roots of `env` as canonical paths (symlinks in the roots' own names resolved); roots
// that do not exist are left out.
std::vector<std::filesystem::path> CanonicalRoots(const std::vector<std::string>& roots) {
  std::vector<std::filesystem::path> out;
  for (const auto& root : roots) {
    std::error_code ec;
    auto canonical = std::filesystem::canonical(root, ec);
    if (!ec) out.push_back(std::move(canonical));
  }
  return out;
}

// True when `path`, once every symlink in it is resolved, lies in one of `roots` (canonical).
// A link may point anywhere inside the environment's roots; one that leaves them all, or
// dangles, is treated as absent: Salt's roots backend with fileserver_followsymlinks False.
bool StaysInRoots(const std::filesystem::path& path,
                  const std::vector<std::filesystem::path>& roots) {
  std::error_code ec;
  const auto resolved = std::filesystem::canonical(path, ec);
  if (ec) return false;
  for (const auto& root : roots) {
    auto [root_end, unused] =
        std::mismatch(root.begin(), root.end(), resolved.begin(), resolved.end());
    if (root_end == root.end()) return true;
  }
  return false;
}

std::optional<std::filesystem::path> Find(const config::MasterConfig& config,
                                          const std::string& env, const std::string& rel) {
  const auto* roots = Roots(config, env);
  if (!roots) return std::nullopt;
  const auto canonical_roots = CanonicalRoots(*roots);
  for (const auto& root : *roots) {
    std::filesystem::path candidate = std::filesystem::path(root) / rel;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        StaysInRoots(candidate, canonical_roots)) {
      return candidate;
    }
  }
  return std::nullopt;
}

wire::Value Stat(const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return wire::Value();
  return wire::Value(wire::Array{
      static_cast<long long>(st.st_mode), static_cast<long long>(st.st_ino),       // NOLINT
      static_cast<long long>(st.st_dev), static_cast<long long>(st.st_nlink),      // NOLINT
      static_cast<long long>(st.st_uid), static_cast<long long>(st.st_gid),        // NOLINT
      static_cast<long long>(st.st_size), static_cast<long long>(st.st_atime),     // NOLINT
      static_cast<long long>(st.st_mtime), static_cast<long long>(st.st_ctime)});  // NOLINT
}

// {hash_type, hsum}, or "" (a missing file's answer) when the file cannot be read.
wire::Value HashOf(const std::filesystem::path& p, FileHashes* hashes) {
  FileHashes unremembered(0);
  auto hash = (hashes ? hashes : &unremembered)->Sha256(p);
  if (!hash.ok()) {
    spdlog::warn("file server: {}", hash.error().ToString());
    return wire::Value("");
  }
  return wire::Value::MapOf({{"hash_type", "sha256"}, {"hsum", std::move(hash->sha256_hex)}});
}

enum class ListKind { kFiles, kEmptyDirs, kDirs };

wire::Value List(const config::MasterConfig& config, const std::string& env, std::string prefix,
                 ListKind kind) {
  while (!prefix.empty() && prefix.front() == '/') prefix.erase(prefix.begin());
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  std::set<std::string> out;
  const auto* roots = Roots(config, env);
  if (!roots) return wire::Value::EmptyArray();
  const auto canonical_roots = CanonicalRoots(*roots);
  for (const auto& root : *roots) {
    std::error_code ec;
    std::filesystem::recursive_directory_iterator it(
        root, std::filesystem::directory_options::skip_permission_denied, ec);
    if (ec) continue;
    for (; it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      // Lexical: relative() would resolve a link and list it under its target's name.
      std::string rel = it->path().lexically_relative(root).generic_string();
      if (rel.rfind(prefix, 0) != 0) continue;
      // A link out of the roots is not listed (the iterator never descends into a linked
      // directory, so nothing beneath one is listed either).
      if (it->is_symlink(ec) && !StaysInRoots(it->path(), canonical_roots)) continue;
      bool is_dir = it->is_directory(ec);
      if (kind == ListKind::kFiles && it->is_regular_file(ec)) out.insert(rel);
      if (kind == ListKind::kDirs && is_dir) out.insert(rel);
      if (kind == ListKind::kEmptyDirs && is_dir && std::filesystem::is_empty(it->path(), ec)) {
        out.insert(rel);
      }
    }
  }
  wire::Array a;
  for (const auto& s : out) a.emplace_back(s);
  return wire::Value(std::move(a));
}

}  // namespace

std::optional<wire::Value> HandleFileCommand(const config::MasterConfig& config, FileHashes* hashes,
                                             const std::string& cmd, const wire::Value& load) {
  if (cmd == "_master_opts") {
    wire::Value roots = wire::Value::EmptyMap();
    for (const auto& [env, dirs] : config.file_roots) roots.Set(env, wire::Value::EmptyArray());
    wire::Value opts = wire::Value::MapOf({{"file_roots", roots},
                                           {"top_file_merging_strategy", "merge"},
                                           {"env_order", wire::Value::EmptyArray()},
                                           {"default_top", "base"}});
    const wire::Value* env_only = load.Find("env_only");
    if (!env_only || !env_only->Truthy()) {
      opts.Set("renderer", "jinja|yaml");
      opts.Set("failhard", false);
      opts.Set("state_top", "top.sls");
      opts.Set("state_top_saltenv", wire::Value());
      opts.Set("nodegroups", wire::Value::EmptyMap());
      opts.Set("state_auto_order", true);
      opts.Set("state_events", false);
      opts.Set("state_aggregate", false);
      opts.Set("jinja_env", wire::Value::EmptyMap());
      opts.Set("jinja_sls_env", wire::Value::EmptyMap());
      opts.Set("jinja_lstrip_blocks", false);
      opts.Set("jinja_trim_blocks", false);
    }
    return opts;
  }
  if (cmd == "_master_tops") return wire::Value::EmptyMap();
  if (cmd == "_file_envs") {
    wire::Array envs;
    for (const auto& [env, dirs] : config.file_roots) envs.emplace_back(env);
    return wire::Value(std::move(envs));
  }
  if (cmd == "_file_list") {
    return List(config, LoadStr(load, "saltenv", "base"), LoadStr(load, "prefix"),
                ListKind::kFiles);
  }
  if (cmd == "_file_list_emptydirs") {
    return List(config, LoadStr(load, "saltenv", "base"), LoadStr(load, "prefix"),
                ListKind::kEmptyDirs);
  }
  if (cmd == "_dir_list") {
    return List(config, LoadStr(load, "saltenv", "base"), LoadStr(load, "prefix"), ListKind::kDirs);
  }
  if (cmd == "_symlink_list") return wire::Value::EmptyMap();
  if (cmd == "_file_hash" || cmd == "_file_hash_and_stat" || cmd == "_file_find" ||
      cmd == "_serve_file") {
    std::string saltenv = LoadStr(load, "saltenv", "base");
    auto rel = CleanPath(LoadStr(load, "path"), saltenv);
    std::optional<std::filesystem::path> found;
    if (rel) found = Find(config, saltenv, *rel);
    if (cmd == "_file_hash") return found ? HashOf(*found, hashes) : wire::Value("");
    if (cmd == "_file_hash_and_stat") {
      if (!found) return wire::Value("");
      wire::Value hash = HashOf(*found, hashes);
      if (hash.str()) return hash;
      return wire::Value(wire::Array{std::move(hash), Stat(*found)});
    }
    if (cmd == "_file_find") {
      if (!found) return wire::Value::MapOf({{"path", ""}, {"rel", ""}});
      return wire::Value::MapOf(
          {{"path", found->string()}, {"rel", *rel}, {"stat", Stat(*found)}, {"back", "roots"}});
    }
    // _serve_file: one chunk from loc; an empty chunk ends the transfer.
    if (!found) return wire::Value::MapOf({{"data", ""}, {"dest", ""}});
    std::int64_t loc = 0;
    if (const wire::Value* l = load.Find("loc")) loc = l->int64().value_or(0);
    std::ifstream in(*found, std::ios::binary);
    in.seekg(loc < 0 ? 0 : loc);
    std::string chunk(kFileBufferSize, '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<std::size_t>(in.gcount()));
    return wire::Value::MapOf({{"data", wire::Value::Bin(std::move(chunk))}, {"dest", *rel}});
  }
  return std::nullopt;
}

}  // namespace halite::master
