// The HTTP endpoint HAProxy checks (health_port): GET /health answers 200 while the master
// can do its job and 503 otherwise, with a JSON body saying why; GET /metrics answers
// Prometheus text. One thread ("health") runs an Asio io_context; the handlers only read
// snapshots that other threads keep fresh, so a stuck disk never blocks this thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "halite/common/result.h"

namespace halite::cluster {

struct HealthReport {
  bool healthy = false;
  std::string json;  // the body of /health
};

// What the endpoint needs of one request. Pure functions below so that the parsing of
// untrusted bytes can be tested and fuzzed without a socket.
struct HealthRequest {
  std::string method;     // as sent, e.g. "GET"
  std::string target;     // e.g. "/health"
  unsigned version = 11;  // 10 or 11
};

struct HealthResponse {
  int status = 200;
  std::string content_type;  // empty: none
  std::string body;
};

// Request heads above this many bytes, or bodies above kHealthMaxBody, are refused.
inline constexpr std::size_t kHealthMaxHeader = 8 * 1024;
inline constexpr std::size_t kHealthMaxBody = 4 * 1024;

// Parses one HTTP/1.x request from the front of `bytes` with the parser settings the socket
// code uses. InvalidArgument for malformed or incomplete input, ResourceExhausted beyond the
// limits above. Reentrant.
Result<HealthRequest> ParseHealthRequest(std::string_view bytes);

class HealthServer {
 public:
  using HealthFn = std::function<HealthReport()>;  // thread-safe, non-blocking
  using MetricsFn = std::function<std::string()>;  // thread-safe, non-blocking

  // The answer to `request`: /health and / from `health`, /metrics from `metrics`, 405 for
  // methods other than GET and HEAD, 404 otherwise. Calls at most one of the two functions.
  static HealthResponse Route(const HealthRequest& request, const HealthFn& health,
                              const MetricsFn& metrics);

  HealthServer(std::string address, std::uint16_t port, HealthFn health, MetricsFn metrics);
  ~HealthServer();  // Stop()
  // Binds and starts the thread; Error::Unavailable when the port cannot be bound.
  Status Start();
  void Stop();
  std::uint16_t port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint16_t port_;
};

}  // namespace halite::cluster
