// Bits the CLIs share: reading the master config they point at.
#pragma once

#include <iostream>
#include <string>

#include "halite/config/master_config.h"

namespace halite::apps {

inline constexpr const char* kDefaultMasterConfig = "/etc/halite/master";

// Loads the master config or prints why not (exit code 78 for the caller).
inline std::optional<config::MasterConfig> LoadConfigOrComplain(const std::string& tool,
                                                                const std::string& path) {
  auto loaded = config::LoadMasterConfig(path);
  if (!loaded.ok()) {
    std::cerr << tool << ": " << path << ": " << loaded.error().message << "\n";
    return std::nullopt;
  }
  return std::move(loaded->config);
}

}  // namespace halite::apps
