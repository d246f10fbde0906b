#include "halite/api/http_codec.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "halite/client/cli_args.h"
#include "halite/client/output.h"
#include "halite/master/minion_data.h"

namespace halite::api {

namespace {

constexpr int kMaxJsonDepth = 64;

Result<wire::Value> FromJson(const nlohmann::json& j, int depth) {
  if (depth > kMaxJsonDepth) return Error::InvalidArgument("Invalid JSON document");
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return wire::Value();
    case nlohmann::json::value_t::boolean:
      return wire::Value(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return wire::Value(static_cast<long long>(j.get<std::int64_t>()));
    case nlohmann::json::value_t::number_unsigned:
      return wire::Value(static_cast<unsigned long long>(j.get<std::uint64_t>()));
    case nlohmann::json::value_t::number_float:
      return wire::Value(j.get<double>());
    case nlohmann::json::value_t::string:
      return wire::Value(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      wire::Array a;
      for (const auto& item : j) {
        HALITE_ASSIGN_OR_RETURN(wire::Value v, FromJson(item, depth + 1));
        a.push_back(std::move(v));
      }
      return wire::Value(std::move(a));
    }
    case nlohmann::json::value_t::object: {
      wire::Value m = wire::Value::EmptyMap();
      for (auto it = j.begin(); it != j.end(); ++it) {
        HALITE_ASSIGN_OR_RETURN(wire::Value v, FromJson(it.value(), depth + 1));
        m.map()->emplace_back(wire::Value(it.key()), std::move(v));
      }
      return m;
    }
    default:
      return Error::InvalidArgument("Invalid JSON document");
  }
}

std::string MediaType(std::string_view content_type) {
  std::string_view t = content_type.substr(0, content_type.find(';'));
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  std::string out(t);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

wire::Value ParseForm(std::string_view body) {
  // parse_qsl order, repeated keys collected. Linear in the body: a key's place is looked up
  // in a hash index, and the keys are unique when the map is built, so no entry is searched
  // for (a body of 110,000 distinct keys, under the 1 MiB limit, took 29 s of CPU when each
  // key was searched for among those before it).
  std::vector<std::pair<std::string, std::vector<std::string>>> fields;
  std::unordered_map<std::string, std::size_t> index;
  std::size_t start = 0;
  while (start <= body.size()) {
    std::size_t amp = std::min(body.find('&', start), body.size());
    std::string_view pair = body.substr(start, amp - start);
    start = amp + 1;
    if (pair.empty()) {
      if (amp >= body.size()) break;
      continue;
    }
    std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) continue;  // parse_qsl drops blank-less pairs
    std::string key = UrlDecode(pair.substr(0, eq));
    std::string value = UrlDecode(pair.substr(eq + 1));
    auto [it, added] = index.try_emplace(key, fields.size());
    if (added) {
      fields.push_back({std::move(key), {std::move(value)}});
    } else {
      fields[it->second].second.push_back(std::move(value));
    }
    if (amp >= body.size()) break;
  }
  wire::Value out = wire::Value::EmptyMap();
  wire::Map& map = *out.map();
  map.reserve(fields.size());
  for (auto& [key, values] : fields) {
    const bool yamlify = key == "arg" || key == "kwarg";
    wire::Value value;
    if (key == "arg") {
      wire::Array a;
      for (const auto& v : values) a.push_back(client::YamlifyArg(v));
      value = wire::Value(std::move(a));
    } else if (values.size() == 1) {
      value = yamlify ? client::YamlifyArg(values[0]) : wire::Value(std::move(values[0]));
    } else {
      wire::Array a;
      for (auto& v : values)
        a.push_back(yamlify ? client::YamlifyArg(v) : wire::Value(std::move(v)));
      value = wire::Value(std::move(a));
    }
    map.emplace_back(wire::Value(std::move(key)), std::move(value));
  }
  return out;
}

// Whether `text` opens more arrays and objects inside each other than FromJson would accept
// (one more than kMaxJsonDepth, as an empty innermost container is still accepted there): a
// scan that needs no parse, so 500,000 '[' are refused at once instead of being built as a
// tree first (2 s in the ASan build) only for FromJson to refuse it. Malformed text is left to
// the parser.
bool JsonNestsTooDeep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth + 1) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace

Result<wire::Value> ParseJson(std::string_view text) {
  if (JsonNestsTooDeep(text)) return Error::InvalidArgument("Invalid JSON document");
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Error::InvalidArgument("Invalid JSON document");
  return FromJson(j, 0);
}

Result<wire::Value> ParseBody(std::string_view content_type, std::string_view body) {
  if (body.empty()) return wire::Value();
  const std::string type = MediaType(content_type);
  if (type == "application/json") return ParseJson(body);
  if (type == "application/x-yaml" || type == "text/yaml") {
    auto v = master::YamlToValue(body);
    if (!v.ok()) {
      spdlog::debug("YAML body refused: {}", v.error().message);
      return Error::InvalidArgument("Invalid YAML document");  // rest_cherrypy's words
    }
    return v;
  }
  if (type == "text/plain") {
    auto v = ParseJson(body);
    if (v.ok()) return v;
    return wire::Value(std::string(body));
  }
  if (type == "application/x-www-form-urlencoded") return ParseForm(body);
  return Error::FailedPrecondition("Content type not supported");
}

wire::Value ToLowstate(wire::Value data) {
  if (!data.is_map()) return data;
  if (wire::Value* arg = data.Find("arg"); arg && !arg->is_array()) {
    wire::Array one;
    one.push_back(std::move(*arg));
    *arg = wire::Value(std::move(one));
  }
  wire::Array chunks;
  chunks.push_back(std::move(data));
  return wire::Value(std::move(chunks));
}

std::string BestContentType(std::string_view accept) {
  const std::size_t json = accept.find("application/json");
  const std::size_t yaml = accept.find("application/x-yaml");
  if (yaml != std::string_view::npos && (json == std::string_view::npos || yaml < json)) {
    return "application/x-yaml";
  }
  return "application/json";
}

std::string Serialize(const wire::Value& value, std::string_view content_type) {
  if (content_type == "application/x-yaml") {
    return client::DisplayOutput(value, client::OutputFormat::kYaml);
  }
  return value.ToJson();
}

std::string UrlDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 &&
               hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::map<std::string, std::string> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  std::size_t start = 0;
  while (start < query.size()) {
    std::size_t amp = std::min(query.find('&', start), query.size());
    std::string_view pair = query.substr(start, amp - start);
    start = amp + 1;
    std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      if (!pair.empty()) out[UrlDecode(pair)] = "";
    } else {
      out[UrlDecode(pair.substr(0, eq))] = UrlDecode(pair.substr(eq + 1));
    }
  }
  return out;
}

std::map<std::string, std::string> ParseCookies(std::string_view header) {
  std::map<std::string, std::string> out;
  std::size_t start = 0;
  while (start < header.size()) {
    std::size_t semi = std::min(header.find(';', start), header.size());
    std::string_view pair = header.substr(start, semi - start);
    start = semi + 1;
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view value = pair.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    out.emplace(std::string(pair.substr(0, eq)), std::string(value));
  }
  return out;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 202:
      return "Accepted";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 413:
      return "Request Entity Too Large";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Error";
  }
}

std::string ErrorPage(int status, std::string_view message) {
  std::string title = std::to_string(status) + " " + std::string(ReasonPhrase(status));
  std::string text;
  for (char c : message.empty() ? ReasonPhrase(status) : message) {
    switch (c) {
      case '<':
        text += "&lt;";
        break;
      case '>':
        text += "&gt;";
        break;
      case '&':
        text += "&amp;";
        break;
      case '"':
        text += "&quot;";
        break;
      default:
        text.push_back(c);
    }
  }
  return "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Transitional//EN\" "
         "\"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd\">\n<html>\n<head>\n"
         "    <meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\"></meta>\n"
         "    <title>" +
         title + "</title>\n</head>\n<body>\n    <h2>" + title + "</h2>\n    <p>" + text +
         "</p>\n</body>\n</html>\n";
}

}  // namespace halite::api
