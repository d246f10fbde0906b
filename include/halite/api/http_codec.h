// What rest_cherrypy does to request and response bytes, as pure functions so that untrusted
// input can be tested without a socket: body processors (JSON, YAML, form, text/plain as
// JSON), lowdata_fmt, the output formats (JSON, YAML) chosen by Accept, query strings and
// cookies, CherryPy's error page. Reentrant.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::api {

// A request body as rest_cherrypy's processors read it, by Content-Type (parameters such as
// charset ignored): application/json, application/x-yaml and text/yaml, text/plain (JSON, else
// the text itself), application/x-www-form-urlencoded (repeated keys become lists; `arg`
// and `kwarg` words yamlified as the CLI does). An empty body is nil.
// Error::InvalidArgument "Invalid JSON document" / "Invalid YAML document" (400),
// Error::FailedPrecondition "Content type not supported" (406).
Result<wire::Value> ParseBody(std::string_view content_type, std::string_view body);

// lowdata_fmt: a map becomes a one-chunk list (its `arg` made a list); anything else is
// kept as it is.
wire::Value ToLowstate(wire::Value data);

// JSON text to a Value (ints stay ints). InvalidArgument when malformed or nested too deeply.
Result<wire::Value> ParseJson(std::string_view text);

// The response format Accept asks for: "application/json" (also for */*, none or anything
// else that names JSON first), or "application/x-yaml".
std::string BestContentType(std::string_view accept);
std::string Serialize(const wire::Value& value, std::string_view content_type);

// Percent-decoding with '+' as space (for query strings and forms).
std::string UrlDecode(std::string_view text);
// "a=1&b=2" into a map; a key given twice keeps its last value.
std::map<std::string, std::string> ParseQuery(std::string_view query);
// The Cookie header's name=value pairs.
std::map<std::string, std::string> ParseCookies(std::string_view header);

// CherryPy's HTML error page for `status` with `message` (the reason phrase when empty).
std::string ErrorPage(int status, std::string_view message);
std::string_view ReasonPhrase(int status);

}  // namespace halite::api
