// salt.netapi.NetapiClient for halite: runs one lowstate chunk as salt-api does, after the
// checks it makes (a known client, enabled in netapi_enable_clients, credentials given as a
// token or as username/password/eauth). Where each client's ACL is checked:
//   local, local_async, local_batch  the master, on each publish that carries the token
//                                    (master/clear_funcs)
//   runner, wheel (+_async)  here, with auth::SpecCheck, before anything runs
// Blocking (the master's sockets, PAM, disk): call from the API's worker threads. Thread-safe:
// each calling thread gets its own connection to the master.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "halite/api/api_options.h"
#include "halite/auth/authenticator.h"
#include "halite/client/local_client.h"
#include "halite/common/check.h"
#include "halite/common/result.h"
#include "halite/config/master_config.h"
#include "halite/runners/runner.h"
#include "halite/wire/msgpack.h"

namespace halite::api {

// The clients salt.netapi knows (Invalid client otherwise), and those halite runs.
bool KnownClient(std::string_view client);

// A client whose result Salt returns as a generator (cmd_batch), which rest_cherrypy's
// exec_lowstate flattens into "return": Run's list is spliced in item by item.
bool YieldsEach(std::string_view client);

// An error of Run, as rest_cherrypy's hypermedia_handler answers it: Unauthenticated -> 401,
// InvalidArgument -> 400, Unavailable -> 503, DeadlineExceeded -> 504, else 500.
int HttpStatusFor(const Error& error);

class Netapi {
 public:
  Netapi(const config::MasterConfig& config, const ApiOptions& options,
         auth::Authenticator& authenticator);
  ~Netapi();

  // One chunk ({"client", "fun", "tgt", "arg", "kwarg", "token" | "username"+"password"+
  // "eauth", ...}); the value salt-api puts in "return".
  Result<wire::Value> Run(wire::Value chunk);
  // Whether Run's error is a chunk's eauth credentials refused (a failed login), not a bad
  // token or an ACL refusal (both also 401).
  static bool IsFailedLogin(const Error& error);
  // Fires an event on the master's bus (webhooks).
  Status FireEvent(const std::string& tag, const wire::Value& data);
  // This thread's connection to the master (made on first use, remade after a failure).
  Result<client::LocalClient*> Master();
  void DropMaster();

 private:
  // The token a chunk authenticates with: its own `token`, or a login with its credentials
  // (`minted` set: removed after the call, as Salt keeps no token for a /run with a password).
  Result<auth::Token> Authenticate(wire::Value& chunk, bool* minted);
  Result<client::PublishRequest> LocalRequest(const auth::Token& token, const wire::Value& chunk);
  Error PublishError(const auth::Token& token, const wire::Value& chunk, const Error& e);
  Result<wire::Value> Local(const auth::Token& token, wire::Value& chunk, bool async);
  // local_batch: Salt's LocalClient.cmd_batch over the batch runner (client/batch.h): a list
  // of {id: return}, one per minion in the order they returned.
  Result<wire::Value> LocalBatch(const auth::Token& token, wire::Value& chunk);
  Result<wire::Value> Runner(const auth::Token& token, wire::Value& chunk, bool async);
  Result<wire::Value> Wheel(const auth::Token& token, wire::Value& chunk, bool async);
  Result<wire::Value> CallRunner(const std::string& fun, const wire::Array& args);
  std::string NewJid();

  const config::MasterConfig& config_;
  const ApiOptions& options_;
  auth::Authenticator& auth_;
  const runners::RunnerTable runners_;
  static constexpr int kMaxAsyncRunners = 16;
  std::mutex async_mu_;
  std::condition_variable async_done_;
  int async_running_ HALITE_GUARDED_BY(async_mu_) = 0;
};

}  // namespace halite::api
