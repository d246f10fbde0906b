// Small blocking file helpers for minion.pem & co. Worker threads only. Internal.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "halite/common/result.h"

namespace halite::minion::internal {

// NotFound when missing; Unavailable / PermissionDenied for other errors.
Result<std::string> ReadWholeFile(const std::filesystem::path& path);
// Temp file in the same directory, chmod `mode`, fsync, rename over `path`.
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view content, mode_t mode);
// mkdir -p; directories made here get `mode`.
Status EnsureDirectory(const std::filesystem::path& path, mode_t mode);

}  // namespace halite::minion::internal
