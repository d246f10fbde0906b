// MinionData::Pillar, for I@/J@ targets (kept apart from minion_data.cc, which the pillar
// work rewrites; it can move there once both have landed).
#include <spdlog/spdlog.h>

#include "halite/keys/fs.h"
#include "halite/master/minion_data.h"

namespace halite::master {

std::optional<wire::Value> MinionData::Pillar(std::string_view id) {
  const std::filesystem::path path = dir_ / std::string(id) / "data.p";
  auto bytes = keys::ReadFile(path);
  if (!bytes.ok()) return std::nullopt;
  auto data = wire::Unpack(*bytes);
  if (!data.ok()) {
    spdlog::warn("minion data cache {} is corrupt: {}", path.string(), data.error().message);
    return std::nullopt;
  }
  const wire::Value* pillar = data->Find("pillar");
  if (pillar == nullptr || !pillar->is_map()) return wire::Value::EmptyMap();
  return *pillar;
}

}  // namespace halite::master
