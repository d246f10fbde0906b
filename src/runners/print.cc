#include "halite/runners/print.h"

#include <algorithm>

#include "halite/wire/target.h"

namespace halite::runners {

namespace {

std::string KeyText(const wire::Value& k) {
  if (const std::string* s = k.str()) return *s;
  return wire::ScalarToString(k);
}

// Salt's nested outputter walks maps in sorted(keys) order.
wire::Value SortedMaps(const wire::Value& v) {
  if (const wire::Map* m = v.map()) {
    wire::Map out;
    out.reserve(m->size());
    for (const auto& [k, val] : *m) out.emplace_back(k, SortedMaps(val));
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return KeyText(a.first) < KeyText(b.first);
    });
    return wire::Value(std::move(out));
  }
  if (const wire::Array* a = v.array()) {
    wire::Array out;
    out.reserve(a->size());
    for (const auto& e : *a) out.push_back(SortedMaps(e));
    return wire::Value(std::move(out));
  }
  return v;
}

// Removes the first line and `n` leading spaces of every other line.
std::string Dedent(const std::string& text, std::size_t n) {
  std::string out;
  std::size_t start = text.find('\n');
  start = start == std::string::npos ? text.size() : start + 1;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    std::size_t skip = 0;
    while (skip < n && start + skip < end && text[start + skip] == ' ') ++skip;
    out.append(text, start + skip, end - start - skip);
    start = end;
  }
  return out;
}

}  // namespace

std::string FormatRunnerValue(const wire::Value& value, client::OutputFormat format) {
  using client::OutputFormat;
  if (format == OutputFormat::kJson) return client::ToPrettyJson(value) + "\n";
  const wire::Value v = format == OutputFormat::kNested ? SortedMaps(value) : value;
  if (format != OutputFormat::kNested && format != OutputFormat::kYaml &&
      format != OutputFormat::kTxt) {
    // raw, pprint, newline_values_only, highstate: the outputter takes the whole value.
    return client::DisplayOutput(v, format, client::OutputOptions{});
  }
  if (const wire::Map* m = v.map()) {
    // A map prints key by key at the top level, as salt-run's outputters print a dict.
    std::string out;
    for (const auto& [k, val] : *m) out += client::FormatReturn(KeyText(k), val, format);
    return out;
  }
  // Another value: the outputter's text for it under a placeholder key, with that key's line
  // (and its indent) taken away again.
  // Plain text: the YAML outputter quotes a key with a control byte in it.
  static const std::string kKey = "k";
  std::string text = client::FormatReturn(kKey, v, format);
  switch (format) {
    case OutputFormat::kNested:
      return Dedent(text, 4);
    case OutputFormat::kYaml:
      if (text.rfind(kKey + ": ", 0) == 0) return text.substr(kKey.size() + 2);
      return Dedent(text, 2);
    case OutputFormat::kTxt:
      return text.substr(std::min(text.size(), kKey.size() + 2));
    case OutputFormat::kJson:
    case OutputFormat::kHighstate:
    case OutputFormat::kRaw:
    case OutputFormat::kPprint:
    case OutputFormat::kNewlineValuesOnly:
    case OutputFormat::kNoReturn:
      return client::DisplayOutput(v, format, client::OutputOptions{});
  }
  return text;
}

std::string FormatDocs(const std::vector<const Runner*>& runners) {
  std::string out;
  for (const Runner* r : runners) out += r->name + ":\n" + r->doc + "\n";
  return out;
}

std::string FormatProgress(const std::string& message, const std::string& stamp,
                           client::OutputFormat format) {
  wire::Value event = wire::Value::MapOf(
      {{"suffix", "progress"},
       {"event", wire::Value::MapOf({{"message", message}, {"_stamp", stamp}})}});
  return FormatRunnerValue(event, format);
}

}  // namespace halite::runners
