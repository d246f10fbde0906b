// EtcdServer: a real single-member etcd (Debian's etcd-server 3.4) for tests, on an address
// of its own: clients on http://<ip>:2379, peers on http://<ip>:2380 (loopback only), data in
// a temp dir. Stop and Start keep the data, so a test can take etcd away and bring it back.
#pragma once

#include <memory>
#include <string>

#include "harness.h"

namespace halite::testing {

class EtcdServer {
 public:
  // Starts etcd on `ip` and waits until /health says true. Fails the test (ADD_FAILURE, and
  // returns nullptr) when etcd is not installed or does not come up.
  static std::unique_ptr<EtcdServer> Start(const std::string& ip);
  ~EtcdServer();  // SIGKILL if still running; the data dir goes with the temp dir
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;

  std::string endpoint() const { return "http://" + ip_ + ":2379"; }
  bool Healthy() const;  // GET /health answers {"health":"true"}
  void Stop();           // SIGTERM and wait
  bool Restart();        // on the same data; waits for Healthy()
  std::string Log() const;

 private:
  explicit EtcdServer(std::string ip) : ip_(std::move(ip)) {}
  bool Launch();
  const std::string ip_;
  TempDir dir_;
  std::unique_ptr<Process> process_;
};

}  // namespace halite::testing
