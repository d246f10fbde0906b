// The HTTP endpoint HAProxy checks (health_port): GET /health answers 200 while the master
// can do its job and 503 otherwise, with a JSON body saying why; GET /metrics answers
// Prometheus text. One thread ("health") runs an Asio io_context; the handlers only read
// snapshots that other threads keep fresh, so a stuck disk never blocks this thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "halite/common/result.h"

namespace halite::cluster {

struct HealthReport {
  bool healthy = false;
  std::string json;  // the body of /health
};

class HealthServer {
 public:
  using HealthFn = std::function<HealthReport()>;  // thread-safe, non-blocking
  using MetricsFn = std::function<std::string()>;  // thread-safe, non-blocking

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
