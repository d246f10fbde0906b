// Value checks shared by master_config.cc and minion_config.cc. Each Check* records a problem
// on the reader (or a warning) and never stops. Private to src/config.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "halite/config/yaml.h"

namespace halite::config::internal {

bool IsIpv4Literal(std::string_view text);
bool IsIpv6Literal(std::string_view text);

// 'text' as shown in "(got 'text')".
std::string Quoted(std::string_view text);

// Salt's valid_id: non-empty, no '/', '\' or NUL; "." and ".." are refused too (file names).
void CheckId(YamlMapReader& reader, std::string_view key, std::string_view id);
void CheckAbsolutePath(YamlMapReader& reader, std::string_view key, std::string_view path,
                       bool may_be_empty);
void CheckNotEmpty(YamlMapReader& reader, std::string_view key, std::string_view value);
void CheckLogLevel(YamlMapReader& reader, std::string_view key, std::string_view level);
// keysize range is read with ReadInt; this only warns about weak keys.
void WarnWeakKeysize(YamlMapReader& reader, std::string_view key, int keysize);
void CheckOneOf(YamlMapReader& reader, std::string_view key, std::string_view value,
                std::initializer_list<std::string_view> allowed);

// Salt's prepend_root_dir for an absolute `path`: root_dir + path, unless root_dir is empty or
// "/", or path is already under root_dir. Relative and empty paths are returned unchanged.
std::string PrefixRootDir(std::string_view root_dir, const std::string& path);

// Limits shared by both configs.
inline constexpr std::int64_t kMaxPort = 65535;
inline constexpr std::int64_t kMinKeysize = 1024;
inline constexpr std::int64_t kMaxKeysize = 16384;
inline constexpr std::int64_t kMaxSeconds = 10LL * 366 * 24 * 3600;  // ten years
inline constexpr std::int64_t kMaxInt = 2147483647;

}  // namespace halite::config::internal
