#include "etcd_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <tuple>

#include "http_client.h"

namespace halite::testing {

namespace {

constexpr const char* kEtcd = "/usr/bin/etcd";

// One GET over a plain socket, bounded by `timeout_ms` per step; the whole answer or "".
std::string HttpGet(const std::string& ip, int port, const std::string& path, int timeout_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  std::string answer;
  pollfd p{fd, POLLOUT, 0};
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ||
      (errno == EINPROGRESS && ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLOUT))) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + ip + "\r\n\r\n";
    if (err == 0 && ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
                        static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (;;) {
        p = {fd, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) != 1) break;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        answer.append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  ::close(fd);
  return answer;
}

}  // namespace

TestPki MakeTestPki(const std::filesystem::path& dir, const std::string& ip) {
  std::filesystem::create_directories(dir);
  TestPki pki{dir / "ca.pem",     dir / "ca.key",     dir / "server.pem",
              dir / "server.key", dir / "client.pem", dir / "client.key"};
  const auto run = [](const std::vector<std::string>& argv) {
    CommandResult r = Run(argv, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_code, 0) << argv[1] << ": " << r.err;
    return r.exit_code == 0;
  };
  const std::string ext_server = (dir / "server.ext").string();
  const std::string ext_client = (dir / "client.ext").string();
  WriteFile(ext_server, "subjectAltName=IP:" + ip + "\nextendedKeyUsage=serverAuth,clientAuth\n");
  WriteFile(ext_client, "extendedKeyUsage=clientAuth\n");
  bool ok = run({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                 pki.ca_key.string(), "-out", pki.ca_cert.string(), "-days", "2", "-subj",
                 "/CN=halite test CA"});
  for (const auto& [name, cert, key, ext] :
       {std::tuple{"server", pki.server_cert, pki.server_key, ext_server},
        std::tuple{"client", pki.client_cert, pki.client_key, ext_client}}) {
    const std::string csr = (dir / (std::string(name) + ".csr")).string();
    ok = ok &&
         run({"/usr/bin/openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key.string(),
              "-out", csr, "-subj", std::string("/CN=halite test ") + name}) &&
         run({"/usr/bin/openssl", "x509", "-req", "-in", csr, "-CA", pki.ca_cert.string(), "-CAkey",
              pki.ca_key.string(), "-CAcreateserial", "-out", cert.string(), "-days", "2",
              "-extfile", ext});
  }
  return ok ? pki : TestPki{};
}

std::unique_ptr<EtcdServer> EtcdServer::Start(const std::string& ip, const TestPki* tls) {
  if (::access(kEtcd, X_OK) != 0) {
    ADD_FAILURE() << kEtcd << " is not installed: run tools/bootstrap (etcd-server)";
    return nullptr;
  }
  std::unique_ptr<EtcdServer> server(new EtcdServer(ip, "etcd1", ""));
  if (tls != nullptr) server->tls_ = *tls;
  if (!server->Launch()) {
    ADD_FAILURE() << "etcd did not become healthy on " << ip << ":\n" << server->Log();
    return nullptr;
  }
  return server;
}

EtcdServer::~EtcdServer() {
  if (process_) process_->Stop(SIGKILL, std::chrono::seconds(10));
}

void EtcdServer::Spawn() {
  const std::string client = endpoint();
  const std::string peer = "http://" + ip_ + ":2380";
  std::vector<std::string> argv{
      kEtcd, "--name", name_, "--data-dir", (dir_.path() / "data").string(), "--listen-client-urls",
      client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
      "--initial-advertise-peer-urls", peer, "--initial-cluster",
      initial_cluster_.empty() ? name_ + "=" + peer : initial_cluster_, "--initial-cluster-token",
      // Members of one cluster share a token; lone servers differ.
      initial_cluster_.empty() ? "halite-test-" + ip_ : "halite-test", "--log-level", "warn"};
  if (tls_) {
    for (const std::string& arg :
         {"--cert-file=" + tls_->server_cert.string(), "--key-file=" + tls_->server_key.string(),
          "--trusted-ca-file=" + tls_->ca_cert.string(), std::string("--client-cert-auth"),
          "--listen-metrics-urls=http://" + ip_ + ":2381"}) {
      argv.push_back(arg);
    }
  }
  process_ = std::make_unique<Process>(argv, dir_.path() / "etcd.log");
}

bool EtcdServer::Launch() {
  Spawn();
  return WaitFor([this] { return !process_->Alive() || Healthy(); }, std::chrono::seconds(60)) &&
         process_->Alive();
}

bool EtcdServer::Healthy() const {
  return HttpGet(ip_, tls_ ? 2381 : 2379, "/health", 1000).find("\"health\":\"true\"") !=
         std::string::npos;
}

void EtcdServer::Stop() {
  if (process_) process_->Stop(SIGTERM, std::chrono::seconds(20));
  process_.reset();
}

void EtcdServer::Kill() {
  if (process_) process_->Stop(SIGKILL, std::chrono::seconds(10));
  process_.reset();
}

bool EtcdServer::Restart() {
  Stop();
  return Launch();
}

std::string EtcdServer::Log() const { return ReadFileOrEmpty(dir_.path() / "etcd.log"); }

std::unique_ptr<EtcdCluster> EtcdCluster::Start(int n) {
  if (::access(kEtcd, X_OK) != 0) {
    ADD_FAILURE() << kEtcd << " is not installed: run tools/bootstrap (etcd-server)";
    return nullptr;
  }
  std::vector<std::string> ips;
  std::string initial;
  for (int i = 0; i < n; ++i) {
    ips.push_back(UniqueLoopbackIp());
    initial += (i ? "," : "") + ("e" + std::to_string(i + 1)) + "=http://" + ips.back() + ":2380";
  }
  std::unique_ptr<EtcdCluster> cluster(new EtcdCluster);
  for (int i = 0; i < n; ++i) {
    cluster->members_.push_back(
        std::unique_ptr<EtcdServer>(new EtcdServer(ips[i], "e" + std::to_string(i + 1), initial)));
  }
  // Together: a member is healthy only once a quorum has elected a leader.
  for (auto& m : cluster->members_) m->Spawn();
  const bool up = WaitFor(
      [&] {
        for (auto& m : cluster->members_) {
          if (!m->Alive() || !m->Healthy()) return false;
        }
        return true;
      },
      std::chrono::seconds(60));
  if (!up) {
    std::string logs;
    for (auto& m : cluster->members_) logs += m->name_ + ":\n" + m->Log() + "\n";
    ADD_FAILURE() << "the etcd cluster did not become healthy:\n" << logs;
    return nullptr;
  }
  return cluster;
}

std::vector<std::string> EtcdCluster::Endpoints() const {
  std::vector<std::string> out;
  for (const auto& m : members_) out.push_back(m->endpoint());
  return out;
}

std::string EtcdCluster::EndpointsYaml() const {
  std::string out = "[";
  for (const auto& e : Endpoints()) out += (out.size() > 1 ? ", " : "") + e;
  return out + "]";
}

int EtcdCluster::Leader() const {
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (!members_[i]->Alive()) continue;
    auto r = HttpCall(members_[i]->ip(), 2379, "POST", "/v3/maintenance/status",
                      {{"Content-Type", "application/json"}}, "{}", std::chrono::seconds(2));
    auto j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (r.status != 200 || !j.is_object() || !j.contains("leader") || !j.contains("header")) {
      continue;
    }
    const auto self = j["header"].value("member_id", std::string());
    const auto leader = j["leader"].is_string() ? j["leader"].get<std::string>() : std::string();
    if (!self.empty() && self == leader) return static_cast<int>(i);
  }
  return -1;
}

EtcdServer* SharedEtcd() {
  static std::unique_ptr<EtcdServer> etcd = EtcdServer::Start(UniqueLoopbackIp());
  return etcd.get();
}

}  // namespace halite::testing
