#include "halite/client/output.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "output_internal.h"

namespace halite::client {

namespace internal {

Colors GetColors(bool use) {
  if (!use) return Colors{};
  return Colors{"\033[0;32m",   "\033[0;31m", "\033[0;1;31m", "\033[0;33m",
                "\033[0;1;33m", "\033[0;36m", "\033[0;0m"};
}

namespace {

// salt.output.nested.NestDisplay.
class NestDisplay {
 public:
  NestDisplay(bool color, std::int64_t retcode) : c_(GetColors(color)), retcode_(retcode) {}

  void Display(const wire::Value& v, int indent, const std::string& prefix,
               std::vector<std::string>& out) const {
    if (v.is_nil() || v.is_bool() || v.is_int() || v.is_float()) {
      out.push_back(U(indent, c_.light_yellow, PyStr(v), prefix));
    } else if (const std::string* s = v.str()) {
      bool first = true;
      for (const std::string& line : SplitLines(*s)) {
        const std::string line_prefix = first ? prefix : std::string(prefix.size(), ' ');
        out.push_back(U(indent, c_.green, StripEsc(line), line_prefix));
        first = false;
      }
    } else if (const wire::Array* a = v.array()) {
      const std::string& color = retcode_ != 0 ? c_.red : c_.green;
      for (const auto& e : *a) {
        if (e.is_array() || e.is_map()) {
          out.push_back(U(indent, color, "|_"));
          Display(e, indent + 2, e.is_map() ? "" : "- ", out);
        } else {
          Display(e, indent, "- ", out);
        }
      }
    } else if (const wire::Map* m = v.map()) {
      const std::string& color = retcode_ != 0 ? c_.red : c_.cyan;
      if (indent) out.push_back(U(indent, color, "----------"));
      for (const auto* kv : SortedItems(*m)) {
        out.push_back(U(indent, color, PyStr(kv->first), prefix, ":"));
        Display(kv->second, indent + 4, "", out);
      }
    } else {
      out.push_back(U(indent, c_.light_yellow, PyStr(v), prefix));
    }
  }

 private:
  std::string U(int indent, const std::string& color, const std::string& msg,
                const std::string& prefix = "", const std::string& suffix = "") const {
    return std::string(static_cast<std::size_t>(std::max(indent, 0)), ' ') + color + prefix + msg +
           c_.endc + suffix;
  }

  Colors c_;
  std::int64_t retcode_;
};

}  // namespace

std::string Nested(const wire::Value& value, int indent, bool color, std::int64_t retcode) {
  std::vector<std::string> lines;
  NestDisplay(color, retcode).Display(value, indent, "", lines);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    out += lines[i];
  }
  return out;
}

}  // namespace internal

namespace {

void Indent(std::string& out, int n) { out.append(static_cast<std::size_t>(std::max(n, 0)), ' '); }

std::string JsonKey(const wire::Value& key) {
  return key.is_str() ? key.ToJson() : wire::Value(key.ToJson()).ToJson();
}

void Json(const wire::Value& v, int indent, int level, std::string& out) {
  if (const wire::Map* m = v.map()) {
    if (m->empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    for (std::size_t i = 0; i < m->size(); ++i) {
      Indent(out, indent * (level + 1));
      out += JsonKey((*m)[i].first) + ": ";
      Json((*m)[i].second, indent, level + 1, out);
      if (i + 1 < m->size()) out += ",";
      out += "\n";
    }
    Indent(out, indent * level);
    out += "}";
    return;
  }
  if (const wire::Array* a = v.array()) {
    if (a->empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < a->size(); ++i) {
      Indent(out, indent * (level + 1));
      Json((*a)[i], indent, level + 1, out);
      if (i + 1 < a->size()) out += ",";
      out += "\n";
    }
    Indent(out, indent * level);
    out += "]";
    return;
  }
  out += v.ToJson();
}

// json.dumps(data, indent=None): one line, ", " and ": " separators.
void CompactJson(const wire::Value& v, std::string& out) {
  if (const wire::Map* m = v.map()) {
    out += "{";
    for (std::size_t i = 0; i < m->size(); ++i) {
      if (i) out += ", ";
      out += JsonKey((*m)[i].first) + ": ";
      CompactJson((*m)[i].second, out);
    }
    out += "}";
  } else if (const wire::Array* a = v.array()) {
    out += "[";
    for (std::size_t i = 0; i < a->size(); ++i) {
      if (i) out += ", ";
      CompactJson((*a)[i], out);
    }
    out += "]";
  } else {
    out += v.ToJson();
  }
}

// Bytes a YAML stream must not carry raw (PyYAML's reader refuses them, and a terminal acts
// on them): C0 controls but tab and newline (JSON escapes those), DEL, bytes that are not
// UTF-8, C1 controls (U+0080-U+009F: U+009B is a CSI), the line and paragraph separators
// and the byte order mark. The character at `i`: its length, and whether it is one of those
// (a stray byte is one byte long).
struct YamlChar {
  std::size_t len;
  bool unsafe;
};
YamlChar YamlCharAt(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return {1, c < 0x20 || c == 0x7f};
  const std::size_t len = (c >= 0xf0 && c < 0xf5) ? 4 : (c >= 0xe0) ? 3 : (c >= 0xc2) ? 2 : 0;
  if (len == 0 || i + len > s.size()) return {1, true};
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return {1, true};
  }
  const bool c1 = c == 0xc2 && b(i + 1) < 0xa0;
  const bool separator = c == 0xe2 && b(i + 1) == 0x80 && (b(i + 2) == 0xa8 || b(i + 2) == 0xa9);
  const bool bom = c == 0xef && b(i + 1) == 0xbb && b(i + 2) == 0xbf;
  return {len, c1 || separator || bom};
}

// A double-quoted scalar: JSON's escapes (which YAML reads; JSON already escapes C0, DEL and
// stray bytes), plus \uXXXX for the characters YamlCharAt names that JSON passes through.
std::string YamlQuoted(const wire::Value& v) {
  const std::string json = v.ToJson();
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size();) {
    const YamlChar ch = YamlCharAt(json, i);
    if (!ch.unsafe || ch.len == 1) {
      out.append(json, i, ch.len);
    } else {
      const auto b = [&](std::size_t k) { return static_cast<unsigned>(json[i + k]) & 0xffu; };
      const unsigned cp = ch.len == 2
                              ? ((b(0) & 0x1f) << 6) | (b(1) & 0x3f)
                              : ((b(0) & 0x0f) << 12) | ((b(1) & 0x3f) << 6) | (b(2) & 0x3f);
      char code[8];
      std::snprintf(code, sizeof code, "\\u%04x", cp);
      out += code;
    }
    i += ch.len;
  }
  return out;
}

// YAML 1.1's implicit types, as PyYAML resolves a plain scalar: a string that reads as one
// of these is quoted. Numbers are caught broadly (anything made of digits, signs, dots,
// underscores, colons and the letters of hex, octal and binary prefixes, after an optional
// sign, that starts with a digit or a dot), which quotes a few strings PyYAML would not.
bool YamlReadsAsAnotherType(const std::string& s) {
  for (const char* word : {"true", "True", "TRUE", "false", "False", "FALSE", "yes", "Yes", "YES",
                           "no",   "No",   "NO",   "on",    "On",    "ON",    "off", "Off", "OFF",
                           "null", "Null", "NULL", "None",  "~",     "=",     "<<"}) {
    if (s == word) return true;
  }
  std::string_view body = s;
  if (!body.empty() && (body.front() == '+' || body.front() == '-')) body.remove_prefix(1);
  for (const char* special : {".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"}) {
    if (body == special) return true;
  }
  if (body.empty() ||
      !(std::isdigit(static_cast<unsigned char>(body.front())) || body.front() == '.')) {
    return false;
  }
  // A date or timestamp: 2001-12-14, 2001-12-14t21:59:43.10-05:00.
  if (body.size() >= 5 && body[4] == '-' && std::all_of(body.begin(), body.begin() + 4, [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    return true;
  }
  return body.find_first_not_of("0123456789abcdefABCDEFxXoObB_.:+-") == std::string_view::npos;
}

bool YamlPlainSafe(const std::string& s) {
  if (s.empty()) return false;
  static const std::string kSpecial = ":#{}[],&*!|>'\"%@`\n";
  if (s.find_first_of(kSpecial) != std::string::npos) return false;
  if (s.front() == ' ' || s.back() == ' ' || s.front() == '-' || s.front() == '?') return false;
  for (std::size_t i = 0; i < s.size();) {
    const YamlChar ch = YamlCharAt(s, i);
    if (ch.unsafe) return false;
    i += ch.len;
  }
  return !YamlReadsAsAnotherType(s);
}

std::string YamlScalar(const wire::Value& v) {
  if (const std::string* s = v.str()) return YamlPlainSafe(*s) ? *s : YamlQuoted(v);
  if (v.is_nil()) return "null";
  if (auto b = v.boolean()) return *b ? "true" : "false";
  return v.ToJson();
}

void Yaml(const wire::Value& v, int indent, std::string& out) {
  if (const wire::Map* m = v.map()) {
    for (const auto& [k, val] : *m) {
      Indent(out, indent);
      out += YamlScalar(k) + ":";
      if ((val.is_map() && !val.map()->empty()) || (val.is_array() && !val.array()->empty())) {
        out += "\n";
        Yaml(val, indent + 2, out);
      } else {
        out += " " +
               (val.is_map()     ? std::string("{}")
                : val.is_array() ? std::string("[]")
                                 : YamlScalar(val)) +
               "\n";
      }
    }
    return;
  }
  if (const wire::Array* a = v.array()) {
    for (const auto& e : *a) {
      Indent(out, indent);
      if (e.is_map() || e.is_array()) {
        out += "-\n";
        Yaml(e, indent + 2, out);
      } else {
        out += "- " + YamlScalar(e) + "\n";
      }
    }
    return;
  }
  Indent(out, indent);
  out += YamlScalar(v) + "\n";
}

// salt.output.txt: "key: line" per line of each value; str() of values that are not text.
std::string Txt(const wire::Value& data) {
  std::string out;
  if (const wire::Map* m = data.map()) {
    for (const auto& [k, v] : *m) {
      if (const std::string* s = v.str(); s && !v.is_binary_str()) {
        for (const auto& line : internal::SplitLines(*s)) out += PyStr(k) + ": " + line + "\n";
      } else {
        out += PyStr(k) + ": " + PyStr(v) + "\n";
      }
    }
    return out;
  }
  if (const std::string* s = data.str()) return *s + "\n";
  return internal::Pprint(data, 1) + "\n";
}

// salt.output.newline_values_only: each minion's value (a list's items) on its own line.
std::string NewlineValuesOnly(const wire::Value& data) {
  std::string out;
  const wire::Map* m = data.map();
  if (m == nullptr) return PyStr(data);
  bool first = true;
  auto add = [&](const wire::Value& v) {
    if (!first) out += "\n";
    first = false;
    out += PyStr(v);
  };
  for (const auto& [k, v] : *m) {
    if (const wire::Array* a = v.array()) {
      for (const auto& e : *a) add(e);
    } else {
      add(v);
    }
  }
  return out;
}

// salt.output.no_return: red text lines, cyan keys, the colour before the indent.
void NoReturn(const wire::Value& v, int indent, const internal::Colors& c, std::string& out) {
  if (const std::string* s = v.str()) {
    std::size_t start = 0;
    for (;;) {
      const std::size_t nl = s->find('\n', start);
      out += c.red + std::string(static_cast<std::size_t>(indent), ' ') +
             s->substr(start, nl == std::string::npos ? std::string::npos : nl - start) + c.endc +
             "\n";
      if (nl == std::string::npos) return;
      start = nl + 1;
    }
  }
  if (const wire::Map* m = v.map()) {
    for (const auto* kv : internal::SortedItems(*m)) {
      out += c.cyan + std::string(static_cast<std::size_t>(indent), ' ') + PyStr(kv->first) +
             c.endc + ":\n";
      NoReturn(kv->second, indent + 4, c, out);
    }
  }
}

std::string Printout(const wire::Value& data, OutputFormat format, const OutputOptions& o) {
  switch (format) {
    case OutputFormat::kNoReturn: {
      std::string out;
      NoReturn(data, 0, internal::GetColors(o.color), out);
      return out;
    }
    case OutputFormat::kNested:
      return internal::Nested(data, 0, o.color, o.retcode);
    case OutputFormat::kHighstate: {
      if (auto text = internal::Highstate(data, o)) return *text;
      return internal::Nested(data, 0, o.color, o.retcode);
    }
    case OutputFormat::kJson: {
      std::string out;
      if (o.indent && *o.indent < 0) {
        CompactJson(data, out);
      } else {
        Json(data, o.indent.value_or(4), 0, out);
      }
      return out;
    }
    case OutputFormat::kYaml: {
      std::string out;
      Yaml(data, 0, out);
      return out;
    }
    case OutputFormat::kTxt:
      return Txt(data);
    case OutputFormat::kRaw:
      return PyStr(data);
    case OutputFormat::kPprint:
      return internal::Pprint(data, o.indent && *o.indent >= 0 ? *o.indent : 1);
    case OutputFormat::kNewlineValuesOnly:
      return NewlineValuesOnly(data);
  }
  return {};
}

}  // namespace

Result<OutputFormat> ParseOutputFormat(std::string_view name) {
  if (name == "nested") return OutputFormat::kNested;
  if (name == "highstate") return OutputFormat::kHighstate;
  if (name == "json") return OutputFormat::kJson;
  if (name == "yaml") return OutputFormat::kYaml;
  if (name == "txt" || name == "text") return OutputFormat::kTxt;
  if (name == "raw") return OutputFormat::kRaw;
  if (name == "pprint") return OutputFormat::kPprint;
  if (name == "newline_values_only") return OutputFormat::kNewlineValuesOnly;
  if (name == "no_return") return OutputFormat::kNoReturn;
  return Error::InvalidArgument("unknown output format '" + std::string(name) +
                                "' (nested, highstate, json, yaml, txt, raw, pprint, "
                                "newline_values_only)");
}

std::string DisplayOutput(const wire::Value& data, OutputFormat format,
                          const OutputOptions& options) {
  std::string text = internal::RStrip(Printout(data, format, options));
  if (text.empty()) return text;
  return text + "\n";
}

std::string FormatReturn(std::string_view id, const wire::Value& value, OutputFormat format) {
  return DisplayOutput(wire::Value::MapOf({{id, value}}), format, {});
}

std::string ToPrettyJson(const wire::Value& value, int indent) {
  std::string out;
  Json(value, indent, 0, out);
  return out;
}

bool IsStateFunction(const wire::Value& fun) {
  const std::string* name = fun.str();
  return name != nullptr && name->rfind("state.", 0) == 0;
}

}  // namespace halite::client
