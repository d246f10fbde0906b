// EtcdServer: a real single-member etcd (Debian's etcd-server 3.4) for tests, on an address
// of its own: clients on http://<ip>:2379, peers on http://<ip>:2380 (loopback only), data in
// a temp dir. Stop and Start keep the data, so a test can take etcd away and bring it back.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness.h"

namespace halite::testing {

// A throwaway PKI made with the openssl CLI: a CA, a server pair naming `ip` in its
// subjectAltName, and a client pair, all signed by the CA (PEM files in `dir`).
struct TestPki {
  std::filesystem::path ca_cert, ca_key, server_cert, server_key, client_cert, client_key;
};
// Empty paths (and a failure reported) when openssl fails.
TestPki MakeTestPki(const std::filesystem::path& dir, const std::string& ip);

class EtcdServer {
 public:
  // Starts etcd on `ip` and waits until /health says true. Fails the test (ADD_FAILURE, and
  // returns nullptr) when etcd is not installed or does not come up. With `tls`, clients
  // speak https with a certificate from its CA (--client-cert-auth); /health is then read on
  // a plain metrics listener (port 2381).
  static std::unique_ptr<EtcdServer> Start(const std::string& ip, const TestPki* tls = nullptr);
  ~EtcdServer();  // SIGKILL if still running; the data dir goes with the temp dir
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;

  std::string endpoint() const { return (tls_ ? "https://" : "http://") + ip_ + ":2379"; }
  const std::string& ip() const { return ip_; }
  bool Healthy() const;  // GET /health answers {"health":"true"}
  void Stop();           // SIGTERM and wait
  void Kill();           // SIGKILL, no goodbye to the other members
  bool Restart();        // on the same data; waits for Healthy()
  bool Alive() const { return process_ && process_->Alive(); }
  // Starts the process on the same data without waiting (members of a cluster come back
  // together: none is healthy before a quorum is).
  void Spawn();
  std::string Log() const;

 private:
  friend class EtcdCluster;
  EtcdServer(std::string ip, std::string name, std::string initial_cluster)
      : ip_(std::move(ip)), name_(std::move(name)), initial_cluster_(std::move(initial_cluster)) {}
  bool Launch();  // Spawn, then wait until healthy
  const std::string ip_;
  const std::string name_;
  const std::string initial_cluster_;  // "e1=http://ip:2380,..."
  std::optional<TestPki> tls_;
  TempDir dir_;
  std::unique_ptr<Process> process_;
};

// A real etcd cluster of `n` members (3 for a quorum that survives one loss), each on its own
// loopback address, started together.
class EtcdCluster {
 public:
  // nullptr (and a failure reported) when the members do not become healthy.
  static std::unique_ptr<EtcdCluster> Start(int n);
  // "[http://a:2379, http://b:2379, ...]" for a master's etcd_endpoints.
  std::string EndpointsYaml() const;
  std::vector<std::string> Endpoints() const;
  EtcdServer& member(std::size_t i) { return *members_[i]; }
  std::size_t size() const { return members_.size(); }
  // The index of the member that leads now (asked of each live member), or -1.
  int Leader() const;

 private:
  std::vector<std::unique_ptr<EtcdServer>> members_;
};

// One etcd for every test in the binary that needs only a prefix of its own (contract suites),
// started on first use; nullptr (and a failure already reported) when it did not start.
EtcdServer* SharedEtcd();

}  // namespace halite::testing
