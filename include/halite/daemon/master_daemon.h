// Builds a halite-master from its config and runs it: the only place that sees every
// component (explicit wiring, no singletons). Start order: keys and stores, then the
// publisher loop, then the request server; stop order is the reverse, draining requests
// and returns before sockets close.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "halite/common/result.h"
#include "halite/config/master_config.h"

namespace halite::daemon {

class MasterDaemon {
 public:
  static Result<std::unique_ptr<MasterDaemon>> Create(config::MasterConfig config);
  ~MasterDaemon();

  // Binds every socket. After it returns OK, minions and CLIs can connect.
  Status Start();
  // Runs the maintenance loop on the calling thread until RequestStop().
  void RunUntilStopped();
  // Thread-safe (not async-signal-safe: call it from a thread that sigwait()s).
  void RequestStop();
  // SIGHUP: reads `config_path` again and applies the keys that are safe to change live
  // (daemon/reload.h), re-reading autosign_file and autoreject_file; says through the service
  // manager and the log which changed keys need a restart. A file that does not load changes
  // nothing. Returns the status line it reported. Call it from one thread at a time.
  std::string Reload(const std::filesystem::path& config_path);
  void Stop();

 private:
  struct Impl;
  explicit MasterDaemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_requested_ = false;
};

}  // namespace halite::daemon
