#include "halite/master/minion_data.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "halite/config/yaml.h"
#include "halite/keys/fs.h"
#include "halite/keys/key_store.h"
#include "halite/wire/keyed_map.h"
#include "halite/wire/target.h"

namespace halite::master {

Status FileMinionData::Store(std::string_view id, const wire::Value& grains,
                             const wire::Value& pillar) {
  const std::filesystem::path dir = dir_ / std::string(id);
  const std::string bytes = wire::Pack(wire::Value::MapOf({{"grains", grains}, {"pillar", pillar}}),
                                       wire::Packing::kBinType);
  // A minion signing in again (master restart, failover, AES rotation) mostly sends what is
  // stored: comparing costs one read, rewriting costs a new inode and a rename.
  if (auto stored = keys::ReadFile(dir / "data.p"); stored.ok() && *stored == bytes) {
    return OkStatus();
  }
  // A cache (Salt does not sync it either): no fsync, which would cap the rate of minion
  // starts at the disk's flush rate, and the directory is made only when the write says so.
  Status written = keys::WriteFileAtomic(dir / "data.p", bytes, 0600, keys::Sync::kNone);
  if (!written.ok() && written.error().code == ErrorCode::kNotFound) {
    HALITE_RETURN_IF_ERROR(keys::EnsureDir(dir, 0700, keys::Sync::kNone));
    written = keys::WriteFileAtomic(dir / "data.p", bytes, 0600, keys::Sync::kNone);
  }
  HALITE_RETURN_IF_ERROR(written);
  std::lock_guard lock(mu_);
  cache_.erase(std::string(id));
  return OkStatus();
}

Status FileMinionData::Remove(std::string_view id) {
  std::error_code ec;
  std::filesystem::remove_all(dir_ / std::string(id), ec);
  std::lock_guard lock(mu_);
  cache_.erase(std::string(id));
  if (ec) return Error::Unavailable("cannot remove minion data of " + std::string(id));
  return OkStatus();
}

Status FileMinionData::ClearData(std::string_view id) {
  std::error_code ec;
  std::filesystem::remove(dir_ / std::string(id) / "data.p", ec);
  std::lock_guard lock(mu_);
  cache_.erase(std::string(id));
  if (ec) return Error::Unavailable("cannot remove the cached data of " + std::string(id));
  return OkStatus();
}

bool FileMinionData::HasMine(std::string_view id) {
  std::error_code ec;
  return std::filesystem::exists(dir_ / std::string(id) / "mine.p", ec);
}

std::optional<wire::Value> FileMinionData::ReadData(const std::filesystem::path& path) const {
  auto bytes = keys::ReadFile(path);
  if (!bytes.ok()) return std::nullopt;
  auto data = wire::Unpack(*bytes);
  if (!data.ok()) {
    spdlog::warn("minion data cache {} is corrupt: {}", path.string(), data.error().message);
    return std::nullopt;
  }
  return std::move(*data);
}

std::optional<wire::Value> FileMinionData::Pillar(std::string_view id) {
  auto data = ReadData(dir_ / std::string(id) / "data.p");
  if (!data) return std::nullopt;
  const wire::Value* pillar = data->Find("pillar");
  if (pillar == nullptr || !pillar->is_map()) return wire::Value::EmptyMap();
  return *pillar;
}

std::optional<wire::Value> FileMinionData::Grains(std::string_view id) {
  const std::filesystem::path path = dir_ / std::string(id) / "data.p";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  std::int64_t mtime =
      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(std::string(id));
    if (it != cache_.end() && it->second.mtime_ns == mtime) return it->second.grains;
  }
  auto data = ReadData(path);
  if (!data) return std::nullopt;
  const wire::Value* grains = data->Find("grains");
  if (!grains || !grains->is_map()) return std::nullopt;
  std::lock_guard lock(mu_);
  cache_[std::string(id)] = Entry{mtime, *grains};
  return *grains;
}

wire::Value FileMinionData::Mine(std::string_view id) {
  auto bytes = keys::ReadFile(dir_ / std::string(id) / "mine.p");
  if (!bytes.ok()) return wire::Value::EmptyMap();
  auto data = wire::Unpack(*bytes);
  if (!data.ok() || !data->is_map()) {
    spdlog::warn("mine data of {} is corrupt; treating it as empty", id);
    return wire::Value::EmptyMap();
  }
  return *data;
}

std::size_t MineEntryBytes(std::string_view fun, const wire::Value& data) {
  return MineEntryBytes(fun, wire::Pack(data, wire::Packing::kBinType).size());
}

Status FileMinionData::UpdateMine(std::string_view id, const wire::Value& data, bool clear,
                                  std::size_t max_bytes) {
  if (!data.is_map()) return Error::InvalidArgument("mine data must be a map");
  std::lock_guard lock(mine_mu_);
  wire::Value before = clear ? wire::Value::EmptyMap() : Mine(id);
  // Keyed, not Value::Set per function: a `_mine` of 20,000 functions took a worker past 10 s
  // (docs/security.md, finding 14).
  wire::KeyedMap merged(before.map() ? std::move(*before.map()) : wire::Map{});
  for (const auto& [k, v] : *data.map()) {
    if (const std::string* fun = k.str()) merged.Set(*fun, v);
  }
  const wire::Value mine(std::move(merged).Take());
  if (max_bytes > 0) {
    std::size_t total = 0;
    for (const auto& [k, v] : *mine.map()) {
      const std::string* fun = k.str();  // a corrupt file's other keys count as empty names
      total += MineEntryBytes(fun ? std::string_view(*fun) : std::string_view(), v);
    }
    if (total > max_bytes) {
      return Error::ResourceExhausted("the mine of " + std::string(id) + " would be " +
                                      std::to_string(total) + " bytes, over " +
                                      std::to_string(max_bytes));
    }
  }
  const std::filesystem::path dir = dir_ / std::string(id);
  HALITE_RETURN_IF_ERROR(keys::EnsureDir(dir_, 0700));
  HALITE_RETURN_IF_ERROR(keys::EnsureDir(dir, 0700));
  return keys::WriteFileAtomic(dir / "mine.p", wire::Pack(mine, wire::Packing::kBinType), 0600);
}

Status FileMinionData::DeleteMine(std::string_view id, std::string_view fun) {
  std::lock_guard lock(mine_mu_);
  wire::Value mine = Mine(id);
  if (!mine.Erase(fun)) return OkStatus();
  return keys::WriteFileAtomic(dir_ / std::string(id) / "mine.p",
                               wire::Pack(mine, wire::Packing::kBinType), 0600);
}

Status FileMinionData::FlushMine(std::string_view id) {
  std::lock_guard lock(mine_mu_);
  std::error_code ec;
  std::filesystem::remove(dir_ / std::string(id) / "mine.p", ec);
  if (ec) return Error::Unavailable("cannot flush the mine of " + std::string(id));
  return OkStatus();
}

namespace {

wire::Value ScalarToValue(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return wire::Value(s);
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return wire::Value();
  if (s == "true" || s == "True" || s == "TRUE" || s == "yes" || s == "Yes" || s == "on" ||
      s == "On") {
    return wire::Value(true);
  }
  if (s == "false" || s == "False" || s == "FALSE" || s == "no" || s == "No" || s == "off" ||
      s == "Off") {
    return wire::Value(false);
  }
  std::int64_t i = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (ec == std::errc() && p == s.data() + s.size()) return wire::Value(i);
  if (s.find_first_of(".eE") != std::string::npos &&
      s.find_first_not_of("0123456789.eE+-") == std::string::npos) {
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size()) return wire::Value(d);
  }
  return wire::Value(s);
}

// `deep` is set where a node past 64 levels was left out (as nil).
wire::Value NodeToValue(const YAML::Node& node, int depth, bool& deep) {
  if (depth > 64) {
    deep = true;
    return wire::Value();
  }
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return ScalarToValue(node);
    case YAML::NodeType::Sequence: {
      wire::Array a;
      for (const auto& e : node) a.push_back(NodeToValue(e, depth + 1, deep));
      return wire::Value(std::move(a));
    }
    case YAML::NodeType::Map: {
      wire::Map m;
      for (const auto& kv : node) {
        m.emplace_back(wire::Value(kv.first.Scalar()), NodeToValue(kv.second, depth + 1, deep));
      }
      return wire::Value(std::move(m));
    }
    default:
      return wire::Value();
  }
}

}  // namespace

Result<wire::Value> YamlToValue(std::string_view text) {
  HALITE_ASSIGN_OR_RETURN(YAML::Node node, config::ParseYaml(text));
  bool deep = false;
  wire::Value value = NodeToValue(node, 0, deep);
  if (deep) return Error::InvalidArgument("YAML nested deeper than 64 levels");
  return value;
}

wire::Value YamlNodeToValue(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return wire::Value();
  bool deep = false;  // a config's own shape: cut at 64 levels, as before
  return NodeToValue(node, 0, deep);
}

}  // namespace halite::master
