// The only file that calls yaml-cpp functions that throw. Every entry point catches
// YAML::Exception and turns it into an Error or a ConfigProblem.
#include "halite/config/yaml.h"

#include <glob.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>

namespace halite::config {
namespace {

// Config files are small; this only stops a mistaken path (a device, a huge log) from being
// read into memory.
constexpr std::uintmax_t kMaxFileBytes = 16 * 1024 * 1024;

std::string MarkText(const YAML::Mark& mark) {
  if (mark.is_null()) return "end of input";
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
}

int LineOf(const YAML::Node& node) {
  try {
    const YAML::Mark mark = node.Mark();
    return mark.is_null() ? 0 : mark.line + 1;
  } catch (const YAML::Exception&) {
    return 0;
  }
}

// yaml-cpp often reports a tab-indented line as "illegal map value"; name the real cause.
std::string TabHint(std::string_view text, const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  std::size_t start = 0;
  for (int line = 0; line < mark.line; ++line) {
    start = text.find('\n', start);
    if (start == std::string_view::npos) return "";
    ++start;
  }
  const std::string_view line = text.substr(start, text.find('\n', start) - start);
  const std::string_view indent = line.substr(0, line.find_first_not_of(" \t"));
  if (indent.find('\t') == std::string_view::npos) return "";
  return " (the line is indented with a tab; YAML allows only spaces)";
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

// Counts documents and remembers where the second one's root node is, building nothing.
class DocumentCounter final : public YAML::EventHandler {
 public:
  int documents() const { return documents_; }
  const YAML::Mark& second_root() const { return second_root_; }

  // YAML::EventHandler:
  void OnDocumentStart(const YAML::Mark&) override {
    ++documents_;
    at_root_ = true;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Node(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Node(mark);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& mark) {
    if (at_root_ && documents_ == 2) second_root_ = mark;
    at_root_ = false;
  }

  int documents_ = 0;
  bool at_root_ = false;
  YAML::Mark second_root_ = YAML::Mark::null_mark();
};

constexpr int kMaxDocumentsCounted = 64;

}  // namespace

Result<YAML::Node> ParseYaml(std::string_view text) {
  try {
    const std::string owned(text);
    // Count the documents with our own bounded loop: yaml-cpp 0.7's LoadAll never ends on
    // some malformed input (" ,:\n?[ ab] c", found by config_fuzz; upstream PR 1319), where
    // HandleNextDocument keeps reporting an empty document without consuming anything.
    std::istringstream stream(owned);
    YAML::Parser parser(stream);
    DocumentCounter counter;
    while (counter.documents() < kMaxDocumentsCounted && parser.HandleNextDocument(counter)) {
    }
    if (counter.documents() == 0) return YAML::Node();
    if (counter.documents() > 1) {
      const std::string found = counter.documents() < kMaxDocumentsCounted
                                    ? std::to_string(counter.documents())
                                    : "at least " + std::to_string(kMaxDocumentsCounted);
      return Error::InvalidArgument(MarkText(counter.second_root()) +
                                    ": expected one YAML document, found " + found);
    }
    return YAML::Load(owned);
  } catch (const YAML::Exception& e) {
    return Error::InvalidArgument(
        MarkText(e.mark) + ": " + e.msg +
        (e.msg.find("tab") == std::string::npos ? TabHint(text, e.mark) : ""));
  }
}

Result<YAML::Node> LoadYamlFile(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) {
    return Error::NotFound(name + ": no such file");
  }
  if (ec == std::errc::permission_denied) {
    return Error::PermissionDenied(name + ": " + ec.message());
  }
  if (ec) return Error::Unavailable(name + ": " + ec.message());
  if (!std::filesystem::is_regular_file(status)) {
    return Error::InvalidArgument(name + ": not a regular file");
  }

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(name.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) {
    const int error = errno;
    std::string message = name + ": " + std::error_code(error, std::generic_category()).message();
    if (error == ENOENT) return Error::NotFound(std::move(message));
    if (error == EACCES || error == EPERM) return Error::PermissionDenied(std::move(message));
    return Error::Unavailable(std::move(message));
  }
  std::string text;
  char buffer[8192];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, file.get())) {
    text.append(buffer, n);
    if (text.size() > kMaxFileBytes) {
      return Error::InvalidArgument(name + ": larger than " + std::to_string(kMaxFileBytes) +
                                    " bytes");
    }
  }
  if (std::ferror(file.get())) return Error::Unavailable(name + ": read failed");

  Result<YAML::Node> node = ParseYaml(text);
  if (!node.ok()) return node.error().WithContext(name);
  return node;
}

namespace {

constexpr int kMaxIncludeDepth = 8;

// Salt's dictupdate.update(dest, upd, recursive_update=True, merge_lists=True).
void DeepMerge(YAML::Node dest, const YAML::Node& upd) {
  for (const auto& item : upd) {
    const std::string key = item.first.Scalar();
    YAML::Node existing = dest[key];
    if (existing.IsMap() && item.second.IsMap()) {
      DeepMerge(existing, item.second);
    } else if (existing.IsSequence() && item.second.IsSequence()) {
      for (const auto& element : item.second) existing.push_back(YAML::Clone(element));
    } else {
      dest[key] = YAML::Clone(item.second);
    }
  }
}

Result<std::vector<std::string>> Patterns(const YAML::Node& node, std::string_view key) {
  std::vector<std::string> out;
  if (!node || node.IsNull()) return out;
  if (node.IsScalar()) return std::vector<std::string>{node.Scalar()};
  if (node.IsSequence()) {
    for (const auto& item : node) {
      if (!item.IsScalar()) break;
      out.push_back(item.Scalar());
    }
    if (out.size() == node.size()) return out;
  }
  return Error::InvalidArgument(std::string(key) + ": must be a path or a list of paths (got " +
                                DescribeYaml(node) + ")");
}

std::vector<std::string> GlobFiles(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t matches{};
  if (::glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
    for (std::size_t i = 0; i < matches.gl_pathc; ++i) out.emplace_back(matches.gl_pathv[i]);
  }
  ::globfree(&matches);
  std::sort(out.begin(), out.end());
  return out;
}

Result<YAML::Node> LoadIncluded(const std::filesystem::path& path, int depth,
                                std::vector<std::string>& warnings);

// include_config: the merge of every file `patterns` name, relative to `from`'s directory.
Status IncludeInto(YAML::Node configuration, const std::vector<std::string>& patterns,
                   const std::filesystem::path& from, bool verbose, int depth,
                   std::vector<std::string>& warnings) {
  if (depth > kMaxIncludeDepth) {
    return Error::InvalidArgument(from.string() + ": includes nest deeper than " +
                                  std::to_string(kMaxIncludeDepth) + " levels (a cycle?)");
  }
  for (std::string pattern : patterns) {
    if (pattern.rfind("~/", 0) == 0) {
      if (const char* home = std::getenv("HOME")) pattern = home + pattern.substr(1);
    }
    std::filesystem::path full(pattern);
    if (full.is_relative()) full = from.parent_path() / full;
    const std::vector<std::string> files = GlobFiles(full.string());
    if (files.empty() && verbose) {
      warnings.push_back("include: '" + full.string() + "' matches no files");
    }
    for (const auto& file : files) {
      HALITE_ASSIGN_OR_RETURN(YAML::Node opts, LoadIncluded(file, depth + 1, warnings));
      DeepMerge(configuration, opts);
    }
  }
  return OkStatus();
}

// One included file, with its own `include:` applied over it (Salt: opts.update(...)).
Result<YAML::Node> LoadIncluded(const std::filesystem::path& path, int depth,
                                std::vector<std::string>& warnings) {
  HALITE_ASSIGN_OR_RETURN(YAML::Node node, LoadYamlFile(path));
  if (node.IsNull()) return YAML::Node(YAML::NodeType::Map);
  if (!node.IsMap()) {
    return Error::InvalidArgument(path.string() + ": the top level must be a map (got " +
                                  DescribeYaml(node) + ")");
  }
  HALITE_ASSIGN_OR_RETURN(std::vector<std::string> nested,
                          Patterns(node["include"], path.string() + ": include"));
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& item : node) {
    if (item.first.Scalar() != "include") out[item.first.Scalar()] = item.second;
  }
  if (nested.empty()) return out;
  YAML::Node included(YAML::NodeType::Map);
  HALITE_RETURN_IF_ERROR(IncludeInto(included, nested, path, true, depth, warnings));
  for (const auto& item : included) out[item.first.Scalar()] = item.second;
  return out;
}

}  // namespace

Result<YAML::Node> LoadYamlFileWithIncludes(const std::filesystem::path& path,
                                            std::string_view default_pattern,
                                            std::vector<std::string>& warnings) {
  HALITE_ASSIGN_OR_RETURN(YAML::Node root, LoadYamlFile(path));
  if (!root.IsNull() && !root.IsMap()) return root;  // the reader reports a non-map top level
  try {
    std::vector<std::string> defaults{std::string(default_pattern)};
    if (root.IsMap() && root["default_include"]) {
      HALITE_ASSIGN_OR_RETURN(defaults, Patterns(root["default_include"], "default_include"));
    }
    std::vector<std::string> includes;
    if (root.IsMap()) {
      HALITE_ASSIGN_OR_RETURN(includes, Patterns(root["include"], "include"));
    }
    YAML::Node merged(YAML::NodeType::Map);
    HALITE_RETURN_IF_ERROR(IncludeInto(merged, defaults, path, false, 0, warnings));
    HALITE_RETURN_IF_ERROR(IncludeInto(merged, includes, path, true, 0, warnings));
    if (merged.size() == 0 && root.IsMap() && !root["include"] && !root["default_include"]) {
      return root;  // nothing included: keep the node (and its duplicate-key checks) as read
    }
    YAML::Node out(YAML::NodeType::Map);
    if (root.IsMap()) {
      for (const auto& item : root) {
        const std::string key = item.first.Scalar();
        if (key == "include" || key == "default_include" || merged[key]) continue;
        out.force_insert(item.first, item.second);
      }
    }
    for (const auto& item : merged) out.force_insert(item.first, item.second);
    return out;
  } catch (const YAML::Exception& e) {
    return Error::InvalidArgument(path.string() + ": includes: " + e.what());
  }
}

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
