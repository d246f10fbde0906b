#include "halite/client/output.h"

#include "halite/wire/target.h"

namespace halite::client {

namespace {

void Indent(std::string& out, int n) { out.append(static_cast<std::size_t>(n), ' '); }

std::string NestedScalar(const wire::Value& v) {
  if (v.is_str()) return *v.str();
  return wire::ScalarToString(v);
}

// Salt's nested outputter: maps open with "----------", lists use "- ", strings print
// line by line at the current indent.
void Nested(const wire::Value& v, int indent, std::string& out) {
  if (const wire::Map* m = v.map()) {
    Indent(out, indent);
    out += "----------\n";
    for (const auto& [k, val] : *m) {
      Indent(out, indent);
      out += NestedScalar(k) + ":";
      if (val.is_map() || val.is_array()) {
        out += "\n";
        Nested(val, indent + 4, out);
      } else {
        std::string text = NestedScalar(val);
        if (text.find('\n') != std::string::npos) {
          out += "\n";
          Nested(val, indent + 4, out);
        } else {
          out += "\n";
          Indent(out, indent + 4);
          out += text + "\n";
        }
      }
    }
    return;
  }
  if (const wire::Array* a = v.array()) {
    for (const auto& e : *a) {
      if (e.is_map() || e.is_array()) {
        Indent(out, indent);
        out += "|_\n";
        Nested(e, indent + 2, out);
      } else {
        Indent(out, indent);
        out += "- " + NestedScalar(e) + "\n";
      }
    }
    return;
  }
  std::string text = NestedScalar(v);
  std::size_t start = 0;
  do {
    std::size_t nl = text.find('\n', start);
    Indent(out, indent);
    out.append(text, start, nl == std::string::npos ? std::string::npos : nl - start);
    out += "\n";
    start = nl == std::string::npos ? text.size() + 1 : nl + 1;
  } while (start <= text.size());
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
      const auto& key = (*m)[i].first;
      out += key.is_str() ? key.ToJson() : wire::Value(key.ToJson()).ToJson();
      out += ": ";
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

bool YamlPlainSafe(const std::string& s) {
  if (s.empty()) return false;
  static const std::string kSpecial = ":#{}[],&*!|>'\"%@`\n";
  if (s.find_first_of(kSpecial) != std::string::npos) return false;
  if (s.front() == ' ' || s.back() == ' ' || s.front() == '-' || s.front() == '?') return false;
  for (const char* word :
       {"true", "false", "yes", "no", "null", "on", "off", "True", "False", "None", "~"}) {
    if (s == word) return false;
  }
  return s.find_first_not_of("0123456789.+-eE") != std::string::npos;
}

std::string YamlScalar(const wire::Value& v) {
  if (const std::string* s = v.str()) return YamlPlainSafe(*s) ? *s : v.ToJson();
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

}  // namespace

Result<OutputFormat> ParseOutputFormat(std::string_view name) {
  if (name == "nested" || name == "highstate") return OutputFormat::kNested;
  if (name == "json") return OutputFormat::kJson;
  if (name == "yaml") return OutputFormat::kYaml;
  if (name == "txt" || name == "raw") return OutputFormat::kTxt;
  return Error::InvalidArgument("unknown output format '" + std::string(name) +
                                "' (nested, json, yaml, txt)");
}

std::string ToPrettyJson(const wire::Value& value, int indent) {
  std::string out;
  Json(value, indent, 0, out);
  return out;
}

std::string FormatReturn(std::string_view id, const wire::Value& value, OutputFormat format) {
  std::string out;
  switch (format) {
    case OutputFormat::kNested:
      out += std::string(id) + ":\n";
      Nested(value, 4, out);
      return out;
    case OutputFormat::kJson:
      return ToPrettyJson(wire::Value::MapOf({{id, value}})) + "\n";
    case OutputFormat::kYaml: {
      wire::Value doc = wire::Value::MapOf({{id, value}});
      Yaml(doc, 0, out);
      return out;
    }
    case OutputFormat::kTxt:
      return std::string(id) + ": " +
             (value.is_map() || value.is_array() ? value.ToJson() : NestedScalar(value)) + "\n";
  }
  return out;
}

}  // namespace halite::client
