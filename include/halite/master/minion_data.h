// The minion data cache (salt-wire 9.5): <cachedir>/minions/<id>/data.p = msgpack-bin
// {grains, pillar}, written on `_pillar` (atomically, but not fsync'ed: it is a cache), read
// for grain targeting. Files are shared by every master of a cluster; reads are cached by
// mtime. Thread-safe; blocks on disk: call from
// worker threads.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::master {

class MinionData {
 public:
  explicit MinionData(std::filesystem::path cachedir) : dir_(std::move(cachedir) / "minions") {}

  Status Store(std::string_view id, const wire::Value& grains, const wire::Value& pillar);
  // The cached grains of `id`, or nullopt when none were stored (or the file is unreadable).
  std::optional<wire::Value> Grains(std::string_view id);
  // The cached pillar of `id` ({} when data.p holds none), or nullopt when no data was stored
  // (or the file is unreadable). Read from disk on each call (minion_data_pillar.cc).
  std::optional<wire::Value> Pillar(std::string_view id);
  Status Remove(std::string_view id);

  // The mine (salt-wire 6.2): <cachedir>/minions/<id>/mine.p = msgpack-bin {fun: data}.
  // `clear` replaces the stored map instead of merging into it. Serialised per master by a
  // mutex; concurrent masters on a shared dir: last writer wins for one minion's mine.
  Status UpdateMine(std::string_view id, const wire::Value& data, bool clear);
  Status DeleteMine(std::string_view id, std::string_view fun);
  Status FlushMine(std::string_view id);
  // {} when the minion has no mine data.
  wire::Value Mine(std::string_view id);

 private:
  // The {grains, pillar} map of data.p; nullopt when missing or corrupt (logged).
  std::optional<wire::Value> ReadData(const std::filesystem::path& path) const;
  struct Entry {
    std::int64_t mtime_ns = 0;
    wire::Value grains;
  };
  const std::filesystem::path dir_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> cache_ HALITE_GUARDED_BY(mu_);
  std::mutex mine_mu_;
};

// YAML text to a Value with YAML 1.1 scalars as Salt's loader reads them (ints, floats,
// true/false/yes/no, null/~, quoted strings stay strings).
Result<wire::Value> YamlToValue(std::string_view text);
// The same for a parsed node (config values such as nodegroups); nil for an undefined node.
wire::Value YamlNodeToValue(const YAML::Node& node);

}  // namespace halite::master
