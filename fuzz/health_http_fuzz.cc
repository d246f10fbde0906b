// The health endpoint's HTTP request parser (ParseHealthRequest, Beast underneath, with the
// socket code's limits) and the routing of whatever parses.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "halite/cluster/health_server.h"
#include "halite/common/check.h"

namespace cluster = halite::cluster;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto request = cluster::ParseHealthRequest(bytes);
  if (!request.ok()) return 0;
  HALITE_CHECK(request->version == 10 || request->version == 11) << request->version;
  const cluster::HealthServer::HealthFn health = [] {
    return cluster::HealthReport{true, "{\"healthy\": true}"};
  };
  const cluster::HealthServer::MetricsFn metrics = [] { return std::string("up 1\n"); };
  auto response = cluster::HealthServer::Route(*request, health, metrics);
  HALITE_CHECK(response.status >= 200 && response.status < 600);
  return 0;
}
