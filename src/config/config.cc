#include "halite/config/config.h"

#include <arpa/inet.h>

#include <fstream>

#include "checks.h"
#include "halite/common/logging.h"

namespace halite::config {

std::string FormatProblems(const std::vector<ConfigProblem>& problems) {
  std::string text;
  for (const ConfigProblem& problem : problems) {
    if (!text.empty()) text += '\n';
    text += problem.key + ": " + problem.message;
  }
  return text;
}

Status ProblemsToStatus(const std::vector<ConfigProblem>& problems) {
  if (problems.empty()) return OkStatus();
  return Error::InvalidArgument(FormatProblems(problems));
}

std::string DefaultId() { return DefaultIdFrom("/etc/hostname"); }

std::string DefaultIdFrom(const std::filesystem::path& hostname_file) {
  std::ifstream in(hostname_file);
  std::string line;
  if (in && std::getline(in, line)) {
    constexpr std::string_view kSpace = " \t\r\n\v\f";
    const std::size_t begin = line.find_first_not_of(kSpace);
    if (begin != std::string::npos) {
      const std::size_t end = line.find_last_not_of(kSpace);
      return line.substr(begin, end - begin + 1);
    }
  }
  return "localhost";
}

namespace internal {

bool IsIpv4Literal(std::string_view text) {
  in_addr address{};
  return inet_pton(AF_INET, std::string(text).c_str(), &address) == 1;
}

bool IsIpv6Literal(std::string_view text) {
  in6_addr address{};
  return inet_pton(AF_INET6, std::string(text).c_str(), &address) == 1;
}

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

void CheckId(YamlMapReader& reader, std::string_view key, std::string_view id) {
  if (id.empty()) {
    reader.AddProblem(key, "must not be empty");
  } else if (id.find_first_of(std::string_view("/\\\0", 3)) != std::string_view::npos) {
    reader.AddProblem(key, "must not contain '/', '\\' or NUL (got " + Quoted(id) + ")");
  } else if (id == "." || id == "..") {
    reader.AddProblem(key, "must not be '.' or '..' (got " + Quoted(id) + ")");
  }
}

void CheckAbsolutePath(YamlMapReader& reader, std::string_view key, std::string_view path,
                       bool may_be_empty) {
  if (path.empty()) {
    if (!may_be_empty) reader.AddProblem(key, "must not be empty");
    return;
  }
  if (path.front() != '/')
    reader.AddProblem(key, "must be an absolute path (got " + Quoted(path) + ")");
}

void CheckNotEmpty(YamlMapReader& reader, std::string_view key, std::string_view value) {
  if (value.empty()) reader.AddProblem(key, "must not be empty");
}

void CheckLogLevel(YamlMapReader& reader, std::string_view key, std::string_view level) {
  if (!ParseLogLevel(level)) {
    reader.AddProblem(key,
                      "must be one of trace, debug, info, warning, error, critical, quiet (got " +
                          Quoted(level) + ")");
  }
}

void WarnWeakKeysize(YamlMapReader& reader, std::string_view key, int keysize) {
  if (keysize < 2048) {
    reader.AddWarning(std::string(key) + ": " + std::to_string(keysize) +
                      "-bit RSA keys are weak; use 2048 or more");
  }
}

void CheckOneOf(YamlMapReader& reader, std::string_view key, std::string_view value,
                std::initializer_list<std::string_view> allowed) {
  std::string names;
  for (std::string_view name : allowed) {
    if (name == value) return;
    if (!names.empty()) names += ", ";
    names += name;
  }
  reader.AddProblem(key, "must be one of " + names + " (got " + Quoted(value) + ")");
}

std::string PrefixRootDir(std::string_view root_dir, const std::string& path) {
  std::string_view root = root_dir;
  while (!root.empty() && root.back() == '/') root.remove_suffix(1);
  if (root.empty() || path.empty() || path.front() != '/') return path;
  if (path == root || (path.starts_with(root) && path[root.size()] == '/')) return path;
  return std::string(root) + path;
}

}  // namespace internal
}  // namespace halite::config
