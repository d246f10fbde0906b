// salt-api's request bytes before any login: the body processors by Content-Type (JSON, YAML,
// text/plain, form with `arg`/`kwarg` yamlified), lowdata_fmt, both response formats, the
// query string, the Cookie header and the HTML error page. Byte 0 picks the content type;
// the rest is the body (and, whole, the query, the cookies and the error message).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "halite/api/http_codec.h"
#include "halite/common/check.h"

namespace api = halite::api;

namespace {

constexpr std::array<std::string_view, 8> kTypes = {
    "application/json",
    "application/x-yaml",
    "text/yaml; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    " Application/JSON ;q=1",
    "multipart/form-data",
    "",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view type = kTypes[data[0] % kTypes.size()];
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);

  auto parsed = api::ParseBody(type, body);
  if (parsed.ok()) {
    halite::wire::Value lowstate = api::ToLowstate(*parsed);
    (void)api::Serialize(lowstate, "application/json");
    (void)api::Serialize(lowstate, "application/x-yaml");
  }
  (void)api::BestContentType(body);
  (void)api::ParseQuery(body);
  (void)api::ParseCookies(body);
  // The error page escapes the message: no markup comes from the caller.
  const std::string page = api::ErrorPage(400, body);
  const std::string plain = api::ErrorPage(400, "x");
  HALITE_CHECK(std::count(page.begin(), page.end(), '<') ==
               std::count(plain.begin(), plain.end(), '<'))
      << "markup in the error page";
  return 0;
}
