// YamlMapReader: typed reads of one YAML map with every problem collected, and
// DescribeYaml. Like yaml.cc, every yaml-cpp call that may throw is caught here.
#include <limits>
#include <string>
#include <utility>

#include "halite/config/yaml.h"

namespace halite::config {
namespace {

int LineOf(const YAML::Node& node) {
  try {
    const YAML::Mark mark = node.Mark();
    return mark.is_null() ? 0 : mark.line + 1;
  } catch (const YAML::Exception&) {
    return 0;
  }
}

std::string Quote(std::string_view text) { return "'" + std::string(text) + "'"; }

// Runs one read; a yaml-cpp exception becomes a problem for `key` instead of escaping.
template <typename F>
auto Guarded(YamlMapReader& reader, std::string_view key, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const YAML::Exception& e) {
    reader.AddProblem(key, "cannot be read: " + e.msg);
    return {};
  }
}

std::string RangeText(std::int64_t min, std::int64_t max, std::string_view unit) {
  auto with_unit = [unit](std::int64_t n) {
    std::string text = std::to_string(n);
    if (unit.empty()) return text;
    // "1 second", "5 seconds".
    std::string_view name = (n == 1 || n == -1) ? unit.substr(0, unit.size() - 1) : unit;
    return text + " " + std::string(name);
  };
  // Limits that only guard the type's range read better as "at least".
  if (max == std::numeric_limits<std::int32_t>::max() ||
      max == std::numeric_limits<std::int64_t>::max()) {
    return "must be at least " + with_unit(min);
  }
  return "must be between " + std::to_string(min) + " and " + with_unit(max);
}

}  // namespace

std::string DescribeYaml(const YAML::Node& node) {
  try {
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
        return "nothing";
      case YAML::NodeType::Null:
        return "null";
      case YAML::NodeType::Scalar:
        return Quote(node.Scalar());
      case YAML::NodeType::Sequence:
        return "a list";
      case YAML::NodeType::Map:
        return "a map";
    }
  } catch (const YAML::Exception&) {
  }
  return "an unreadable value";
}

YamlMapReader::YamlMapReader(const YAML::Node& node, std::string prefix)
    : prefix_(std::move(prefix)) {
  std::string where = prefix_;
  if (!where.empty() && where.back() == '.') where.pop_back();
  if (where.empty()) where = "(top level)";
  try {
    if (!node.IsDefined() || node.IsNull()) return;
    if (!node.IsMap()) {
      AddRawProblem(where, "expected a map of settings (got " + DescribeYaml(node) + ")");
      return;
    }
    for (const auto& item : node) {
      const YAML::Node& key = item.first;
      if (!key.IsScalar()) {
        AddRawProblem(where, "keys must be names, line " + std::to_string(LineOf(key)) + " (got " +
                                 DescribeYaml(key) + ")");
        continue;
      }
      const std::string& name = key.Scalar();
      bool duplicate = false;
      for (const Entry& entry : entries_) {
        if (entry.key != name) continue;
        AddProblem(name, "set more than once (lines " + std::to_string(entry.line) + " and " +
                             std::to_string(LineOf(key)) + ")");
        duplicate = true;
        break;
      }
      if (!duplicate) entries_.push_back({name, item.second, LineOf(key), false});
    }
  } catch (const YAML::Exception& e) {
    AddRawProblem(where, "cannot be read: " + e.msg);
  }
}

bool YamlMapReader::Has(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.key != key) continue;
    try {
      return !entry.value.IsNull();
    } catch (const YAML::Exception&) {
      return true;  // present; the Read* call reports why it cannot be read
    }
  }
  return false;
}

bool YamlMapReader::HasScalar(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.key != key) continue;
    try {
      return entry.value.IsScalar();
    } catch (const YAML::Exception&) {
      return false;
    }
  }
  return false;
}

bool YamlMapReader::HasProblem(std::string_view key) const {
  const std::string full = FullKey(key);
  for (const ConfigProblem& problem : problems_) {
    if (problem.key == full ||
        (problem.key.starts_with(full) &&
         (problem.key[full.size()] == '.' || problem.key[full.size()] == '['))) {
      return true;
    }
  }
  return false;
}

YamlMapReader::Entry* YamlMapReader::Take(std::string_view key) {
  for (Entry& entry : entries_) {
    if (entry.key != key) continue;
    entry.used = true;
    try {
      return entry.value.IsNull() ? nullptr : &entry;
    } catch (const YAML::Exception& e) {
      AddProblem(key, "cannot be read: " + e.msg);
      return nullptr;
    }
  }
  return nullptr;
}

bool YamlMapReader::ReadString(std::string_view key, std::string& out) {
  Entry* entry = Take(key);
  if (entry == nullptr) return false;
  return Guarded(*this, key, [&] {
    if (!entry->value.IsScalar()) {
      AddProblem(key, "expected a string (got " + DescribeYaml(entry->value) + ")");
      return false;
    }
    out = entry->value.Scalar();
    return true;
  });
}

bool YamlMapReader::ReadBool(std::string_view key, bool& out) {
  Entry* entry = Take(key);
  if (entry == nullptr) return false;
  return Guarded(*this, key, [&] {
    const YAML::Node& value = entry->value;
    bool parsed = false;
    if (!value.IsScalar() || !YAML::convert<bool>::decode(value, parsed)) {
      AddProblem(key, "expected true or false (got " + DescribeYaml(value) + ")");
      return false;
    }
    // Quoted (tag "!") or tagged !!str: Salt would see a string, and any non-empty one is true.
    if (const std::string& tag = value.Tag(); tag == "!" || tag.ends_with(":str")) {
      AddProblem(key, "expected true or false without quotes (got " + DescribeYaml(value) + ")");
      return false;
    }
    out = parsed;
    return true;
  });
}

std::optional<std::int64_t> YamlMapReader::ReadInteger(std::string_view key, std::int64_t min,
                                                       std::int64_t max, std::string_view unit) {
  Entry* entry = Take(key);
  if (entry == nullptr) return std::nullopt;
  return Guarded(*this, key, [&]() -> std::optional<std::int64_t> {
    const YAML::Node& value = entry->value;
    std::int64_t parsed = 0;
    if (!value.IsScalar() || !YAML::convert<std::int64_t>::decode(value, parsed)) {
      const std::string expected = unit.empty() ? std::string("expected an integer")
                                                : "expected a whole number of " + std::string(unit);
      AddProblem(key, expected + " (got " + DescribeYaml(value) + ")");
      return std::nullopt;
    }
    if (parsed < min || parsed > max) {
      AddProblem(key, RangeText(min, max, unit) + " (got " + std::to_string(parsed) + ")");
      return std::nullopt;
    }
    return parsed;
  });
}

bool YamlMapReader::ReadStringList(std::string_view key, std::vector<std::string>& out,
                                   bool allow_single) {
  Entry* entry = Take(key);
  if (entry == nullptr) return false;
  return Guarded(*this, key, [&] {
    const YAML::Node& value = entry->value;
    if (value.IsScalar() && allow_single) {
      out = {value.Scalar()};
      return true;
    }
    if (!value.IsSequence()) {
      AddProblem(key, "expected a list of strings (got " + DescribeYaml(value) + ")");
      return false;
    }
    std::vector<std::string> items;
    bool ok = true;
    for (std::size_t i = 0; i < value.size(); ++i) {
      const YAML::Node item = value[i];
      if (!item.IsScalar()) {
        AddProblem(std::string(key) + "[" + std::to_string(i) + "]",
                   "expected a string (got " + DescribeYaml(item) + ")");
        ok = false;
        continue;
      }
      items.push_back(item.Scalar());
    }
    if (ok) out = std::move(items);
    return ok;
  });
}

bool YamlMapReader::ReadStringListMap(std::string_view key,
                                      std::map<std::string, std::vector<std::string>>& out) {
  Entry* entry = Take(key);
  if (entry == nullptr) return false;
  return Guarded(*this, key, [&] {
    const YAML::Node& value = entry->value;
    if (!value.IsMap()) {
      AddProblem(key, "expected a map of name: [list] (got " + DescribeYaml(value) + ")");
      return false;
    }
    std::map<std::string, std::vector<std::string>> result;
    bool ok = true;
    for (const auto& item : value) {
      if (!item.first.IsScalar()) {
        AddProblem(key, "names must be strings (got " + DescribeYaml(item.first) + ")");
        ok = false;
        continue;
      }
      const std::string& name = item.first.Scalar();
      const std::string item_key = std::string(key) + "." + name;
      if (result.contains(name)) {
        AddProblem(item_key, "set more than once");
        ok = false;
        continue;
      }
      std::vector<std::string>& list = result[name];
      const YAML::Node& items = item.second;
      if (items.IsNull()) continue;  // "base:" with nothing: an empty list, as in Salt
      if (!items.IsSequence()) {
        AddProblem(item_key, "expected a list of strings (got " + DescribeYaml(items) + ")");
        ok = false;
        continue;
      }
      for (std::size_t i = 0; i < items.size(); ++i) {
        const YAML::Node element = items[i];
        if (!element.IsScalar()) {
          AddProblem(item_key + "[" + std::to_string(i) + "]",
                     "expected a string (got " + DescribeYaml(element) + ")");
          ok = false;
          continue;
        }
        list.push_back(element.Scalar());
      }
    }
    if (ok) out = std::move(result);
    return ok;
  });
}

bool YamlMapReader::ReadMap(std::string_view key, YAML::Node& out) {
  Entry* entry = Take(key);
  if (entry == nullptr) return false;
  return Guarded(*this, key, [&] {
    if (!entry->value.IsMap()) {
      AddProblem(key, "expected a map (got " + DescribeYaml(entry->value) + ")");
      return false;
    }
    out.reset(entry->value);  // rebind the handle; operator= would rewrite the shared node
    return true;
  });
}

bool YamlMapReader::ReadSequence(std::string_view key, YAML::Node& out) {
  Entry* entry = Take(key);
  if (entry == nullptr) return false;
  return Guarded(*this, key, [&] {
    if (!entry->value.IsSequence()) {
      AddProblem(key, "expected a list (got " + DescribeYaml(entry->value) + ")");
      return false;
    }
    out.reset(entry->value);
    return true;
  });
}

void YamlMapReader::AddProblem(std::string_view key, std::string message) {
  // Keep problems in document order: by the line of the top-level key, and after all of them
  // the ones whose key is not in the document.
  const std::string_view top = key.substr(0, key.find_first_of(".["));
  int line = std::numeric_limits<int>::max();
  for (const Entry& entry : entries_) {
    if (entry.key == top && entry.line > 0) {
      line = entry.line;
      break;
    }
  }
  std::size_t at = problem_lines_.size();
  while (at > 0 && problem_lines_[at - 1] > line) --at;
  problems_.insert(problems_.begin() + static_cast<std::ptrdiff_t>(at),
                   {FullKey(key), std::move(message)});
  problem_lines_.insert(problem_lines_.begin() + static_cast<std::ptrdiff_t>(at), line);
}

void YamlMapReader::AddRawProblem(std::string key, std::string message) {
  problems_.push_back({std::move(key), std::move(message)});
  problem_lines_.push_back(std::numeric_limits<int>::max());
}

void YamlMapReader::AddWarning(std::string message) { warnings_.push_back(std::move(message)); }

void YamlMapReader::WarnUnknownKeys() {
  WarnUnknownKeys([](std::string_view key, const YAML::Node&) -> std::optional<std::string> {
    return "unknown key '" + std::string(key) + "' (ignored)";
  });
}

void YamlMapReader::WarnUnknownKeys(const UnknownKeyDescriber& describe) {
  for (const Entry& entry : entries_) {
    if (entry.used) continue;
    std::optional<std::string> warning;
    try {
      warning = describe(FullKey(entry.key), entry.value);
    } catch (const YAML::Exception& e) {
      warning = FullKey(entry.key) + ": cannot be read (" + e.msg + "), ignored";
    }
    if (warning) warnings_.push_back(std::move(*warning));
  }
}

std::string YamlMapReader::FullKey(std::string_view key) const {
  return prefix_ + std::string(key);
}

}  // namespace halite::config
