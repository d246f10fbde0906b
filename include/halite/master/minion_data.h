// The minion data cache (salt-wire 9.5): each minion's grains and pillar, stored on `_pillar`
// and read for targeting, and its mine (salt-wire 6.2). Backends: FileMinionData (Salt's
// localfs layout under <cachedir>/minions, shared by the masters of a shared-folder cluster)
// and PostgreSQL (stores/postgres_minion_data.h, `cache: postgres`); stores::OpenMinionData
// picks one from the config. Thread-safe; may block on disk or network: call from workers.
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
  virtual ~MinionData() = default;

  // Replaces the grains and pillar of `id` (nil for either: none).
  virtual Status Store(std::string_view id, const wire::Value& grains,
                       const wire::Value& pillar) = 0;
  // The cached grains of `id`, or nullopt when none were stored (or they cannot be read).
  virtual std::optional<wire::Value> Grains(std::string_view id) = 0;
  // The cached pillar of `id` ({} when the stored data holds none), or nullopt when no data
  // was stored (or it cannot be read).
  virtual std::optional<wire::Value> Pillar(std::string_view id) = 0;
  // Forgets the grains and pillar of `id`; its mine stays (cache.clear_all's first half).
  virtual Status ClearData(std::string_view id) = 0;
  // Forgets everything about `id` (its key was deleted).
  virtual Status Remove(std::string_view id) = 0;

  // The mine: {fun: data} per minion. `clear` replaces the stored map instead of merging.
  // `max_bytes` (0: none) bounds the mine as it would be after the update, counted as each
  // function's name plus its packed data (MineEntryBytes): past it nothing is stored and the
  // error is ResourceExhausted. The check and the write are one step, so two updates at once
  // cannot both pass it (on one master for files; across masters for PostgreSQL).
  virtual Status UpdateMine(std::string_view id, const wire::Value& data, bool clear,
                            std::size_t max_bytes) = 0;
  virtual Status DeleteMine(std::string_view id, std::string_view fun) = 0;
  virtual Status FlushMine(std::string_view id) = 0;
  // {} when the minion has no mine data.
  virtual wire::Value Mine(std::string_view id) = 0;
  // Whether any mine data is stored for `id` (cache.mine lists only those minions).
  virtual bool HasMine(std::string_view id) = 0;
};

// <cachedir>/minions/<id>/data.p = msgpack-bin {grains, pillar}, written atomically but not
// fsync'ed (it is a cache); grains reads are cached by mtime. mine.p = msgpack-bin {fun: data},
// serialised per master by a mutex; masters sharing the dir: last writer wins for one
// minion's mine.
class FileMinionData final : public MinionData {
 public:
  explicit FileMinionData(std::filesystem::path cachedir) : dir_(std::move(cachedir) / "minions") {}

  Status Store(std::string_view id, const wire::Value& grains, const wire::Value& pillar) override;
  std::optional<wire::Value> Grains(std::string_view id) override;
  std::optional<wire::Value> Pillar(std::string_view id) override;  // read on each call
  Status ClearData(std::string_view id) override;
  Status Remove(std::string_view id) override;
  Status UpdateMine(std::string_view id, const wire::Value& data, bool clear,
                    std::size_t max_bytes) override;
  Status DeleteMine(std::string_view id, std::string_view fun) override;
  Status FlushMine(std::string_view id) override;
  wire::Value Mine(std::string_view id) override;
  bool HasMine(std::string_view id) override;

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

// What one mine function counts towards max_bytes: its name plus its data packed as stored.
std::size_t MineEntryBytes(std::string_view fun, const wire::Value& data);
// The same with the data already packed.
inline std::size_t MineEntryBytes(std::string_view fun, std::size_t packed_bytes) {
  return fun.size() + packed_bytes;
}

// YAML text to a Value with YAML 1.1 scalars as Salt's loader reads them (ints, floats,
// true/false/yes/no, null/~, quoted strings stay strings). InvalidArgument for what ParseYaml
// refuses and for nesting deeper than 64 levels.
Result<wire::Value> YamlToValue(std::string_view text);
// The same for a parsed node (config values such as nodegroups); nil for an undefined node.
wire::Value YamlNodeToValue(const YAML::Node& node);

}  // namespace halite::master
