// Value::ToJson: JSON text for logs, outputters and tests.
#include <charconv>
#include <cmath>
#include <cstdio>

#include "halite/wire/msgpack.h"

namespace halite::wire {

namespace {

void AppendJsonString(const std::string& s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c == '\r') {
      out += "\\r";
      ++i;
    } else if (c == '\t') {
      out += "\\t";
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
      ++i;
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
    } else {
      // Copy a valid UTF-8 sequence through; escape stray bytes one by one.
      std::size_t len = (c >= 0xf0 && c < 0xf5) ? 4 : (c >= 0xe0) ? 3 : (c >= 0xc2) ? 2 : 0;
      bool valid = len > 0 && c < 0xf5 && i + len <= s.size();
      for (std::size_t k = 1; valid && k < len; ++k) {
        valid = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      }
      if (valid) {
        out.append(s, i, len);
        i += len;
      } else {
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xf]);
        ++i;
      }
    }
  }
  out.push_back('"');
}

void AppendJson(const Value& v, std::string& out) {
  std::visit(
      [&out](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Nil>) {
          out += "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t>) {
          out += std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          if (std::isfinite(x)) {
            // Shortest text that reads back to the same double, as Python's repr.
            char buf[40];
            auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
            std::string text(buf, ec == std::errc() ? end : buf);
            if (text.find_first_of(".e") == std::string::npos) text += ".0";
            out += text;
          } else {
            out += "null";
          }
        } else if constexpr (std::is_same_v<T, Str>) {
          AppendJsonString(x.bytes, out);
        } else if constexpr (std::is_same_v<T, Array>) {
          out.push_back('[');
          for (std::size_t i = 0; i < x.size(); ++i) {
            if (i) out += ", ";
            AppendJson(x[i], out);
          }
          out.push_back(']');
        } else if constexpr (std::is_same_v<T, Map>) {
          out.push_back('{');
          for (std::size_t i = 0; i < x.size(); ++i) {
            if (i) out += ", ";
            if (const std::string* k = x[i].first.str()) {
              AppendJsonString(*k, out);
            } else if (x[i].first.is_map() || x[i].first.is_array()) {
              // Rendering a container key and escaping it as a string doubles the escapes at
              // every level: a 54-byte key nested 25 deep took 540 MB. JSON has no such keys.
              AppendJsonString(x[i].first.is_map() ? "<map key>" : "<array key>", out);
            } else {
              AppendJsonString(x[i].first.ToJson(), out);
            }
            out += ": ";
            AppendJson(x[i].second, out);
          }
          out.push_back('}');
        } else {  // Ext: datetime (78) renders as its text, others as a tagged object
          if (x.type == 78) {
            AppendJsonString(x.data, out);
          } else {
            out += "{\"__ext__\": " + std::to_string(x.type) + "}";
          }
        }
      },
      v.variant());
}

}  // namespace

std::string Value::ToJson() const {
  std::string out;
  AppendJson(*this, out);
  return out;
}

}  // namespace halite::wire
