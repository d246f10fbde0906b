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
#include "halite/wire/target.h"

namespace halite::master {

Status MinionData::Store(std::string_view id, const wire::Value& grains,
                         const wire::Value& pillar) {
  const std::filesystem::path dir = dir_ / std::string(id);
  const std::string bytes = wire::Pack(wire::Value::MapOf({{"grains", grains}, {"pillar", pillar}}),
                                       wire::Packing::kBinType);
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

Status MinionData::Remove(std::string_view id) {
  std::error_code ec;
  std::filesystem::remove_all(dir_ / std::string(id), ec);
  std::lock_guard lock(mu_);
  cache_.erase(std::string(id));
  if (ec) return Error::Unavailable("cannot remove minion data of " + std::string(id));
  return OkStatus();
}

std::optional<wire::Value> MinionData::Grains(std::string_view id) {
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
  auto bytes = keys::ReadFile(path);
  if (!bytes.ok()) return std::nullopt;
  auto data = wire::Unpack(*bytes);
  if (!data.ok()) {
    spdlog::warn("minion data cache {} is corrupt: {}", path.string(), data.error().message);
    return std::nullopt;
  }
  const wire::Value* grains = data->Find("grains");
  if (!grains || !grains->is_map()) return std::nullopt;
  std::lock_guard lock(mu_);
  cache_[std::string(id)] = Entry{mtime, *grains};
  return *grains;
}

wire::Value MinionData::Mine(std::string_view id) {
  auto bytes = keys::ReadFile(dir_ / std::string(id) / "mine.p");
  if (!bytes.ok()) return wire::Value::EmptyMap();
  auto data = wire::Unpack(*bytes);
  if (!data.ok() || !data->is_map()) {
    spdlog::warn("mine data of {} is corrupt; treating it as empty", id);
    return wire::Value::EmptyMap();
  }
  return *data;
}

Status MinionData::UpdateMine(std::string_view id, const wire::Value& data, bool clear) {
  if (!data.is_map()) return Error::InvalidArgument("mine data must be a map");
  std::lock_guard lock(mine_mu_);
  wire::Value mine = clear ? wire::Value::EmptyMap() : Mine(id);
  for (const auto& [k, v] : *data.map()) {
    if (const std::string* fun = k.str()) mine.Set(*fun, v);
  }
  const std::filesystem::path dir = dir_ / std::string(id);
  HALITE_RETURN_IF_ERROR(keys::EnsureDir(dir_, 0700));
  HALITE_RETURN_IF_ERROR(keys::EnsureDir(dir, 0700));
  return keys::WriteFileAtomic(dir / "mine.p", wire::Pack(mine, wire::Packing::kBinType), 0600);
}

Status MinionData::DeleteMine(std::string_view id, std::string_view fun) {
  std::lock_guard lock(mine_mu_);
  wire::Value mine = Mine(id);
  if (!mine.Erase(fun)) return OkStatus();
  return keys::WriteFileAtomic(dir_ / std::string(id) / "mine.p",
                               wire::Pack(mine, wire::Packing::kBinType), 0600);
}

Status MinionData::FlushMine(std::string_view id) {
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

wire::Value NodeToValue(const YAML::Node& node, int depth) {
  if (depth > 64) return wire::Value();
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return ScalarToValue(node);
    case YAML::NodeType::Sequence: {
      wire::Array a;
      for (const auto& e : node) a.push_back(NodeToValue(e, depth + 1));
      return wire::Value(std::move(a));
    }
    case YAML::NodeType::Map: {
      wire::Map m;
      for (const auto& kv : node) {
        m.emplace_back(wire::Value(kv.first.Scalar()), NodeToValue(kv.second, depth + 1));
      }
      return wire::Value(std::move(m));
    }
    default:
      return wire::Value();
  }
}

void MergeInto(wire::Value& dst, const wire::Value& src) {
  if (!dst.is_map() || !src.is_map()) {
    dst = src;
    return;
  }
  for (const auto& [k, v] : *src.map()) {
    const std::string* key = k.str();
    if (!key) continue;
    wire::Value* existing = dst.Find(*key);
    if (existing && existing->is_map() && v.is_map()) {
      MergeInto(*existing, v);
    } else {
      dst.Set(*key, v);
    }
  }
}

Result<wire::Value> LoadSls(const std::vector<std::string>& dirs, const std::string& name) {
  std::string rel = name;
  for (char& c : rel) {
    if (c == '.') c = '/';
  }
  if (rel.find("..") != std::string::npos || (!rel.empty() && rel[0] == '/')) {
    return Error::InvalidArgument("bad sls name '" + name + "'");
  }
  for (const auto& dir : dirs) {
    for (const auto& candidate : {std::filesystem::path(dir) / (rel + ".sls"),
                                  std::filesystem::path(dir) / rel / "init.sls"}) {
      auto text = keys::ReadFile(candidate);
      if (!text.ok()) continue;
      auto value = YamlToValue(*text);
      if (!value.ok()) return value.error().WithContext(candidate.string());
      if (value->is_nil()) return wire::Value::EmptyMap();
      if (!value->is_map()) {
        return Error::InvalidArgument(candidate.string() + ": pillar sls must be a map");
      }
      return value;
    }
  }
  return Error::NotFound("pillar sls '" + name + "' not found");
}

}  // namespace

Result<wire::Value> YamlToValue(std::string_view text) {
  HALITE_ASSIGN_OR_RETURN(YAML::Node node, config::ParseYaml(text));
  return NodeToValue(node, 0);
}

Result<wire::Value> CompilePillar(const std::map<std::string, std::vector<std::string>>& roots,
                                  std::string_view id, const wire::Value& grains) {
  wire::Value pillar = wire::Value::EmptyMap();
  for (const auto& [env, dirs] : roots) {
    wire::Value top;
    bool found = false;
    for (const auto& dir : dirs) {
      auto text = keys::ReadFile(std::filesystem::path(dir) / "top.sls");
      if (!text.ok()) continue;
      HALITE_ASSIGN_OR_RETURN(top, YamlToValue(*text));
      found = true;
      break;
    }
    if (!found || !top.is_map()) continue;
    const wire::Value* env_top = top.Find(env);
    if (!env_top || !env_top->is_map()) continue;
    for (const auto& [target, sls_list] : *env_top->map()) {
      const std::string* tgt = target.str();
      if (!tgt) continue;
      std::string tgt_type = "glob";
      std::vector<std::string> names;
      if (const wire::Array* items = sls_list.array()) {
        for (const auto& item : *items) {
          if (const std::string* s = item.str()) names.push_back(*s);
          if (const wire::Value* m = item.Find("match")) {
            if (const std::string* t = m->str()) tgt_type = *t;
          }
        }
      }
      wire::TargetContext ctx{id, &grains, false, ":"};
      auto matched = wire::MatchTarget(wire::Value(*tgt), tgt_type, ctx);
      if (!matched.ok() || !*matched) continue;
      for (const auto& name : names) {
        auto sls = LoadSls(dirs, name);
        if (!sls.ok()) {
          spdlog::warn("pillar for {}: {}", id, sls.error().message);
          continue;
        }
        MergeInto(pillar, *sls);
      }
    }
  }
  return pillar;
}

}  // namespace halite::master
