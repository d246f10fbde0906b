// Python's text rules as Salt's outputters see them: str(), repr(), splitlines(), strip(),
// float repr and pprint.pformat (width 80, sorted dict keys).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "output_internal.h"

namespace halite::client {

namespace internal {

namespace {

bool IsPySpace(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

// Code points in UTF-8 text (Python's len() of the decoded str).
std::size_t CodePoints(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string ReprStr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == static_cast<unsigned char>(quote)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::string Repr(const wire::Value& v, bool sort_keys);

std::string ReprMap(const wire::Map& m, bool sort_keys) {
  std::string out = "{";
  bool first = true;
  auto add = [&](const std::pair<wire::Value, wire::Value>& kv) {
    if (!first) out += ", ";
    first = false;
    out += Repr(kv.first, sort_keys) + ": " + Repr(kv.second, sort_keys);
  };
  if (sort_keys) {
    for (const auto* kv : SortedItems(m)) add(*kv);
  } else {
    for (const auto& kv : m) add(kv);
  }
  return out + "}";
}

std::string Repr(const wire::Value& v, bool sort_keys) {
  if (const std::string* s = v.str()) return v.is_binary_str() ? "b" + ReprStr(*s) : ReprStr(*s);
  if (const wire::Map* m = v.map()) return ReprMap(*m, sort_keys);
  if (const wire::Array* a = v.array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < a->size(); ++i) {
      if (i) out += ", ";
      out += Repr((*a)[i], sort_keys);
    }
    return out + "]";
  }
  return PyStr(v);
}

class PrettyPrinter {
 public:
  explicit PrettyPrinter(int indent_per_level) : per_level_(std::max(indent_per_level, 0)) {}

  void Format(const wire::Value& v, int indent, int allowance, int level) {
    const std::string rep = Repr(v, true);
    const int max_width = kWidth - indent - allowance;
    if (static_cast<int>(CodePoints(rep)) > max_width) {
      if (const wire::Map* m = v.map(); m && !m->empty())
        return Dict(*m, indent, allowance, level + 1);
      if (const wire::Array* a = v.array(); a && !a->empty()) {
        return List(*a, indent, allowance, level + 1);
      }
      if (const std::string* s = v.str(); s && !v.is_binary_str() && !s->empty()) {
        return Str(*s, indent, allowance, level + 1);
      }
    }
    out_ += rep;
  }

  std::string Take() { return std::move(out_); }

 private:
  static constexpr int kWidth = 80;

  void Dict(const wire::Map& m, int indent, int allowance, int level) {
    out_ += "{";
    if (per_level_ > 1) out_.append(static_cast<std::size_t>(per_level_ - 1), ' ');
    indent += per_level_;
    const auto items = SortedItems(m);
    const std::string delimnl = ",\n" + std::string(static_cast<std::size_t>(indent), ' ');
    for (std::size_t i = 0; i < items.size(); ++i) {
      const bool last = i + 1 == items.size();
      const std::string rep = Repr(items[i]->first, true);
      out_ += rep + ": ";
      Format(items[i]->second, indent + static_cast<int>(CodePoints(rep)) + 2,
             last ? allowance + 1 : 1, level);
      if (!last) out_ += delimnl;
    }
    out_ += "}";
  }

  void List(const wire::Array& a, int indent, int allowance, int level) {
    out_ += "[";
    indent += per_level_;
    if (per_level_ > 1) out_.append(static_cast<std::size_t>(per_level_ - 1), ' ');
    const std::string delimnl = ",\n" + std::string(static_cast<std::size_t>(indent), ' ');
    for (std::size_t i = 0; i < a.size(); ++i) {
      const bool last = i + 1 == a.size();
      if (i) out_ += delimnl;
      Format(a[i], indent, last ? allowance + 1 : 1, level);
    }
    out_ += "]";
  }

  // pprint's _pprint_str: a long string split at line ends and then between words.
  void Str(const std::string& s, int indent, int allowance, int level) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < s.size()) {
      std::size_t nl = s.find('\n', start);
      std::size_t end = nl == std::string::npos ? s.size() : nl + 1;
      lines.push_back(s.substr(start, end - start));
      start = end;
    }
    if (level == 1) {
      indent += 1;
      allowance += 1;
    }
    const int max_width = kWidth - indent;
    int max_width1 = max_width;
    std::vector<std::string> chunks;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string rep = ReprStr(lines[i]);
      if (i + 1 == lines.size()) max_width1 -= allowance;
      if (static_cast<int>(CodePoints(rep)) <= max_width1) {
        chunks.push_back(rep);
        continue;
      }
      std::vector<std::string> parts;  // re.findall(r'\S*\s*', line) without the empty last
      std::size_t p = 0;
      const std::string& line = lines[i];
      while (p < line.size()) {
        std::size_t q = p;
        while (q < line.size() && !IsPySpace(static_cast<unsigned char>(line[q]))) ++q;
        while (q < line.size() && IsPySpace(static_cast<unsigned char>(line[q]))) ++q;
        parts.push_back(line.substr(p, q - p));
        p = q;
      }
      int max_width2 = max_width;
      std::string current;
      for (std::size_t j = 0; j < parts.size(); ++j) {
        const std::string candidate = current + parts[j];
        if (j + 1 == parts.size() && i + 1 == lines.size()) max_width2 -= allowance;
        if (static_cast<int>(CodePoints(ReprStr(candidate))) > max_width2) {
          if (!current.empty()) chunks.push_back(ReprStr(current));
          current = parts[j];
        } else {
          current = candidate;
        }
      }
      if (!current.empty()) chunks.push_back(ReprStr(current));
    }
    if (chunks.size() == 1) {
      out_ += ReprStr(s);
      return;
    }
    if (level == 1) out_ += "(";
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (i) out_ += "\n" + std::string(static_cast<std::size_t>(indent), ' ');
      out_ += chunks[i];
    }
    if (level == 1) out_ += ")";
  }

  int per_level_;
  std::string out_;
};

}  // namespace

std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines;
  std::string line;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    std::size_t skip = 0;
    if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) {
      skip = 1;
    } else if (c == '\r') {
      skip = i + 1 < text.size() && text[i + 1] == '\n' ? 2 : 1;
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) == 0x85) {
      skip = 2;
    } else if (c == 0xe2 && i + 2 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(text[i + 2]) == 0xa8 ||
                static_cast<unsigned char>(text[i + 2]) == 0xa9)) {
      skip = 3;
    }
    if (skip == 0) {
      line += static_cast<char>(c);
      continue;
    }
    lines.push_back(std::move(line));
    line.clear();
    i += skip - 1;
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

std::string Strip(std::string_view text) {
  std::size_t b = 0;
  std::size_t e = text.size();
  while (b < e && IsPySpace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && IsPySpace(static_cast<unsigned char>(text[e - 1]))) --e;
  return std::string(text.substr(b, e - b));
}

std::string RStrip(std::string_view text) {
  std::size_t e = text.size();
  while (e > 0 && IsPySpace(static_cast<unsigned char>(text[e - 1]))) --e;
  return std::string(text.substr(0, e));
}

std::string PyFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  const bool negative = s[0] == '-';
  if (negative) s.erase(0, 1);
  const std::size_t e = s.find('e');
  const int exp = std::stoi(s.substr(e + 1));
  std::string digits;
  for (char c : s.substr(0, e)) {
    if (c != '.') digits += c;
  }
  std::string out;
  const int point = exp + 1;
  if (exp >= -4 && exp < 16) {
    if (point <= 0) {
      out = "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
    } else if (point >= static_cast<int>(digits.size())) {
      out = digits + std::string(static_cast<std::size_t>(point) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<std::size_t>(point)) + "." +
            digits.substr(static_cast<std::size_t>(point));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  }
  return negative ? "-" + out : out;
}

std::string StripEsc(std::string text) {
  std::replace(text.begin(), text.end(), '\033', '?');
  return text;
}

std::vector<const std::pair<wire::Value, wire::Value>*> SortedItems(const wire::Map& map) {
  std::vector<const std::pair<wire::Value, wire::Value>*> items;
  items.reserve(map.size());
  bool all_str = true;
  bool all_num = true;
  for (const auto& kv : map) {
    items.push_back(&kv);
    all_str = all_str && kv.first.is_str();
    all_num = all_num && (kv.first.is_int() || kv.first.is_float() || kv.first.is_bool());
  }
  auto by_text = [](const auto* a, const auto* b) { return PyStr(a->first) < PyStr(b->first); };
  if (all_num && !all_str) {
    std::stable_sort(items.begin(), items.end(), [](const auto* a, const auto* b) {
      return a->first.float64().value_or(a->first.boolean().value_or(false) ? 1 : 0) <
             b->first.float64().value_or(b->first.boolean().value_or(false) ? 1 : 0);
    });
  } else {
    std::stable_sort(items.begin(), items.end(), by_text);
  }
  return items;
}

std::string Pprint(const wire::Value& value, int indent_per_level) {
  PrettyPrinter p(indent_per_level);
  p.Format(value, 0, 0, 0);
  return p.Take();
}

}  // namespace internal

std::string PyStr(const wire::Value& v) {
  if (const std::string* s = v.str()) return v.is_binary_str() ? internal::Repr(v, false) : *s;
  if (auto b = v.boolean()) return *b ? "True" : "False";
  if (v.is_nil()) return "None";
  if (auto i = v.int64()) return std::to_string(*i);
  if (auto u = v.uint64()) return std::to_string(*u);
  if (auto d = v.float64(); d && v.is_float()) return internal::PyFloatRepr(*d);
  if (v.is_map() || v.is_array()) return internal::Repr(v, false);
  return v.ToJson();
}

std::string PyRepr(const wire::Value& v) { return internal::Repr(v, false); }

}  // namespace halite::client
