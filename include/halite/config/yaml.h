// The yaml-cpp adapter. yaml-cpp reports failures by throwing; src/config/yaml.cc is the only
// file that calls its throwing functions, and no exception leaves it. Everything outside
// reads YAML through ParseYaml / LoadYamlFile and YamlMapReader. A YAML::Node kept for later
// (job_cache, grains) is read the same way: wrap it in a YamlMapReader.
//
// Scalars: integers use YAML 1.1 forms (decimal, 0x hex, leading-0 octal); a quoted number is
// accepted as that number. Booleans are true/false, yes/no, on/off, y/n in lower, Title or
// UPPER case, unquoted only: Salt keeps a quoted 'false' as a string, which is truthy.
// Thread-safety: functions are reentrant; a YamlMapReader belongs to one thread. YAML::Node
// copies share their data, so a node must not be read and written from two threads at once.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ratio>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "halite/common/result.h"
#include "halite/config/config.h"

namespace halite::config {

// Parses one YAML document. Empty text (or only comments) gives a null node.
// Error::InvalidArgument "line L, column C: <what>" when the YAML is malformed, holds more
// than one document, has an alias inside the node its anchor names (a list or map that holds
// itself, which no walk finishes), or has more than MaxYamlNodes(text.size()) nodes when each
// alias is counted at its anchor's size (as every walk of the result, and every conversion to
// a wire::Value, sees it): a few hundred bytes of nested aliases are otherwise 10^9 nodes.
Result<YAML::Node> ParseYaml(std::string_view text);

// The most nodes ParseYaml lets a document of text_bytes expand to: 100,000 plus two per byte.
// A document without aliases has fewer nodes than bytes, so only aliases can reach it.
std::uint64_t MaxYamlNodes(std::size_t text_bytes);

// Reads and parses a file. Error::NotFound when it does not exist, PermissionDenied when it may
// not be read, InvalidArgument "<path>: line L, column C: <what>" when malformed.
Result<YAML::Node> LoadYamlFile(const std::filesystem::path& path);

// LoadYamlFile plus Salt's include_config: the globs in `default_include` (the file's own
// `default_include:` if set, else `default_pattern`, e.g. "master.d/*.conf") and then in
// `include:` (a path or a list), relative to the including file's directory, each match in
// sorted order, are read and merged (maps deeply, lists extended), and every top-level key they
// set replaces the main file's. An included file may include more (up to 8 levels). An
// `include` glob that matches nothing adds a warning, as Salt logs one; a default_include one
// does not. Unlike Salt, which logs a broken included file and skips it, an unreadable or
// malformed included file is an error naming it. The result has no include keys.
Result<YAML::Node> LoadYamlFileWithIncludes(const std::filesystem::path& path,
                                            std::string_view default_pattern,
                                            std::vector<std::string>& warnings);

// How a value is shown in "(got X)": 'text' for a scalar, else "a list", "a map" or "null".
std::string DescribeYaml(const YAML::Node& node);

// Reads the keys of one YAML map into typed fields and collects problems and warnings instead
// of stopping at the first. Absent keys, and keys whose value is null ("key:" with nothing
// after it), leave the field at its default. Keys set twice are a problem.
class YamlMapReader {
 public:
  // `node` should be a map; null reads as an empty map and anything else is a problem.
  // `prefix` is put before every key in problems and warnings (e.g. "job_cache.").
  explicit YamlMapReader(const YAML::Node& node, std::string prefix = "");

  // True when `key` is present with a non-null value. Does not count as reading it.
  bool Has(std::string_view key) const;
  // True when `key` is present with a scalar value (for keys that take a scalar or a map).
  bool HasScalar(std::string_view key) const;

  // Each Read* assigns `out` and returns true when `key` is present and valid. When it is
  // absent or null it returns false and leaves `out` alone; when the value has the wrong type
  // or is out of range it records a problem, returns false and leaves `out` alone.
  bool ReadString(std::string_view key, std::string& out);
  bool ReadBool(std::string_view key, bool& out);
  template <std::integral T>
  bool ReadInt(std::string_view key, T& out, std::int64_t min, std::int64_t max);
  // A whole number of `out`'s unit (seconds for std::chrono::seconds, and so on).
  template <typename Rep, typename Period>
  bool ReadDuration(std::string_view key, std::chrono::duration<Rep, Period>& out, std::int64_t min,
                    std::int64_t max);
  // A list of scalars. With `allow_single`, a lone scalar reads as a one-element list.
  bool ReadStringList(std::string_view key, std::vector<std::string>& out, bool allow_single);
  // A map of name -> list of scalars (file_roots, pillar_roots).
  bool ReadStringListMap(std::string_view key,
                         std::map<std::string, std::vector<std::string>>& out);
  // A map kept as a node for another component to read.
  bool ReadMap(std::string_view key, YAML::Node& out);
  bool ReadSequence(std::string_view key, YAML::Node& out);

  // Records a problem for `key` (the prefix is added). Problems are kept in document order.
  void AddProblem(std::string_view key, std::string message);
  void AddWarning(std::string message);
  // Adds "unknown key 'k' (ignored)" for every key that no Read* asked for, in document order.
  // Call once, after all reads.
  void WarnUnknownKeys();
  // The same, but `describe` gives the warning for each such key (the full key, with the
  // prefix, and its value; null values too): its text, or nullopt for no warning at all.
  using UnknownKeyDescriber =
      std::function<std::optional<std::string>(std::string_view key, const YAML::Node& value)>;
  void WarnUnknownKeys(const UnknownKeyDescriber& describe);

  // True when a problem was recorded for `key` or anything under it ("key.x", "key[1]").
  // Cross-field checks use it to skip values that kept their default because they were bad.
  bool HasProblem(std::string_view key) const;

  const std::vector<ConfigProblem>& problems() const { return problems_; }
  std::vector<std::string>& warnings() { return warnings_; }

 private:
  struct Entry {
    std::string key;
    YAML::Node value;
    int line = 0;  // 1-based line of the key, 0 when unknown
    bool used = false;
  };

  // The entry for `key` marked as used, or nullptr when it is absent or null.
  Entry* Take(std::string_view key);
  std::optional<std::int64_t> ReadInteger(std::string_view key, std::int64_t min, std::int64_t max,
                                          std::string_view unit);
  std::string FullKey(std::string_view key) const;
  void AddRawProblem(std::string key, std::string message);  // no prefix, sorted last

  std::string prefix_;
  std::vector<Entry> entries_;
  std::vector<ConfigProblem> problems_;
  std::vector<int> problem_lines_;  // problems_[i]'s line, for the document order
  std::vector<std::string> warnings_;
};

namespace internal {
template <typename Period>
constexpr std::string_view UnitName() {
  if constexpr (std::is_same_v<Period, std::milli>)
    return "milliseconds";
  else if constexpr (std::is_same_v<Period, std::ratio<1>>)
    return "seconds";
  else if constexpr (std::is_same_v<Period, std::ratio<60>>)
    return "minutes";
  else if constexpr (std::is_same_v<Period, std::ratio<3600>>)
    return "hours";
  else
    return "units";
}
}  // namespace internal

template <std::integral T>
bool YamlMapReader::ReadInt(std::string_view key, T& out, std::int64_t min, std::int64_t max) {
  HALITE_DCHECK(std::in_range<T>(min) && std::in_range<T>(max)) << "range does not fit " << key;
  std::optional<std::int64_t> value = ReadInteger(key, min, max, "");
  if (!value) return false;
  out = static_cast<T>(*value);
  return true;
}

template <typename Rep, typename Period>
bool YamlMapReader::ReadDuration(std::string_view key, std::chrono::duration<Rep, Period>& out,
                                 std::int64_t min, std::int64_t max) {
  HALITE_DCHECK(std::in_range<Rep>(min) && std::in_range<Rep>(max)) << "range does not fit " << key;
  std::optional<std::int64_t> value = ReadInteger(key, min, max, internal::UnitName<Period>());
  if (!value) return false;
  out = std::chrono::duration<Rep, Period>(static_cast<Rep>(*value));
  return true;
}

}  // namespace halite::config
