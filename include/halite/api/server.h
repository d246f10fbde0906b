// halite-api's HTTP(S) server: Boost.Beast on one Asio thread ("api-http") for every socket,
// blocking work (eauth, the master's sockets, files) on a pool of `worker_threads`
// ("api-worker"), /events streamed from the EventBus. Limits: request heads of 16 KiB, bodies
// of max_request_body_size (413), max_connections, a token bucket of requests per client
// address (429), failed logins answered later and later (router.h), a bounded queue of
// events per /events client (a client that falls behind by more is disconnected, logged and
// counted; one that keeps up never loses an event).
#pragma once

#include <cstdint>
#include <memory>

#include "halite/api/api_options.h"
#include "halite/api/router.h"
#include "halite/auth/authenticator.h"
#include "halite/common/result.h"
#include "halite/config/master_config.h"

namespace halite::api {

class ApiServer {
 public:
  ApiServer(const config::MasterConfig& config, ApiOptions options,
            auth::Authenticator& authenticator);
  ~ApiServer();  // Stop()
  // Loads the TLS key pair (unless disable_ssl), binds host:port (0: any free port) and starts
  // the threads. Error::InvalidArgument for a bad address or key pair, Unavailable when the
  // port cannot be bound.
  Status Start();
  void Stop();
  std::uint16_t port() const;
  const ApiCounters& counters() const;

  struct Impl;  // server.cc

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace halite::api
