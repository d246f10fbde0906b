// Parsing and loading YAML (documents, files, Salt's include/default_include). This file and
// yaml_map_reader.cc are the only ones that call yaml-cpp functions that throw; every entry
// point catches YAML::Exception and turns it into an Error or a ConfigProblem.
#include "halite/config/yaml.h"

#include <glob.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace halite::config {
namespace {

// Config files are small; this only stops a mistaken path (a device, a huge log) from being
// read into memory.
constexpr std::uintmax_t kMaxFileBytes = 16 * 1024 * 1024;

std::string MarkText(const YAML::Mark& mark) {
  if (mark.is_null()) return "end of input";
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
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

constexpr int kMaxDocumentsCounted = 64;

// Counts documents, remembers where the second one's root node is, and sizes the first as a
// walk of the loaded node sees it, building nothing. yaml-cpp loads an alias as the anchored
// node itself, shared: "&a [*a, *a]" (11 bytes) is a list that holds itself twice, and nine
// levels of ten aliases each (500 bytes) are 10^9 nodes to whoever walks them. So each alias
// counts its anchor's nodes again, and the scan throws (a YAML::ParserException, reported
// like a syntax error) at an alias inside the node its anchor names, or once the first
// document passes max_nodes.
class DocumentScan final : public YAML::EventHandler {
 public:
  explicit DocumentScan(std::uint64_t max_nodes) : max_nodes_(max_nodes) {}

  int documents() const { return documents_; }
  const YAML::Mark& second_root() const { return second_root_; }

  // YAML::EventHandler:
  void OnDocumentStart(const YAML::Mark&) override {
    ++documents_;
    at_root_ = true;
    anchors_.clear();  // yaml-cpp numbers anchors per document
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Node(mark);
    if (documents_ != 1) return;
    if (anchor >= anchors_.size() || anchors_[anchor].open) {
      throw YAML::ParserException(mark,
                                  "an alias inside the node its anchor names (a structure "
                                  "that never ends) is not allowed");
    }
    Add(mark, anchors_[anchor].nodes);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Leaf(mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Anchor {
    bool open = false;
    std::uint64_t nodes = 0;  // while open: the count when it began
  };

  void Node(const YAML::Mark& mark) {
    if (at_root_ && documents_ == 2) second_root_ = mark;
    at_root_ = false;
  }
  Anchor* Named(YAML::anchor_t anchor) {
    if (anchor == YAML::NullAnchor || documents_ != 1) return nullptr;
    if (anchor >= anchors_.size()) anchors_.resize(anchor + 1);
    return &anchors_[anchor];
  }
  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    Node(mark);
    if (Anchor* a = Named(anchor)) *a = {false, 1};
    Add(mark, 1);
  }
  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    Node(mark);
    Add(mark, 1);
    if (Anchor* a = Named(anchor)) *a = {true, nodes_ - 1};
    open_.push_back(anchor);
  }
  void Close() {
    const YAML::anchor_t anchor = open_.empty() ? YAML::NullAnchor : open_.back();
    if (!open_.empty()) open_.pop_back();
    // Every node inside has been added to nodes_ once, aliases at their full size.
    if (Anchor* a = Named(anchor)) *a = {false, nodes_ - a->nodes};
  }
  void Add(const YAML::Mark& mark, std::uint64_t n) {
    if (documents_ != 1) return;
    nodes_ += n;  // n <= max_nodes_ + 1 and nodes_ <= max_nodes_ before: no overflow
    if (nodes_ > max_nodes_) {
      throw YAML::ParserException(
          mark, "aliases expand this document past " + std::to_string(max_nodes_) + " nodes");
    }
  }

  std::uint64_t max_nodes_;
  std::uint64_t nodes_ = 0;
  std::vector<Anchor> anchors_;       // by yaml-cpp's anchor number
  std::vector<YAML::anchor_t> open_;  // the collections begun and not ended
  int documents_ = 0;
  bool at_root_ = false;
  YAML::Mark second_root_ = YAML::Mark::null_mark();
};

}  // namespace

std::uint64_t MaxYamlNodes(std::size_t text_bytes) {
  return 100000 + 2 * static_cast<std::uint64_t>(text_bytes);
}

Result<YAML::Node> ParseYaml(std::string_view text) {
  try {
    const std::string owned(text);
    // Count the documents with our own bounded loop: yaml-cpp 0.7's LoadAll never ends on
    // some malformed input (" ,:\n?[ ab] c", found by config_fuzz; upstream PR 1319), where
    // HandleNextDocument keeps reporting an empty document without consuming anything.
    std::istringstream stream(owned);
    YAML::Parser parser(stream);
    DocumentScan scan(MaxYamlNodes(text.size()));
    while (scan.documents() < kMaxDocumentsCounted && parser.HandleNextDocument(scan)) {
    }
    if (scan.documents() == 0) return YAML::Node();
    if (scan.documents() > 1) {
      const std::string found = scan.documents() < kMaxDocumentsCounted
                                    ? std::to_string(scan.documents())
                                    : "at least " + std::to_string(kMaxDocumentsCounted);
      return Error::InvalidArgument(MarkText(scan.second_root()) +
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

}  // namespace halite::config
