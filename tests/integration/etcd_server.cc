#include "etcd_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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

std::unique_ptr<EtcdServer> EtcdServer::Start(const std::string& ip) {
  if (::access(kEtcd, X_OK) != 0) {
    ADD_FAILURE() << kEtcd << " is not installed: run tools/bootstrap (etcd-server)";
    return nullptr;
  }
  std::unique_ptr<EtcdServer> server(new EtcdServer(ip));
  if (!server->Launch()) {
    ADD_FAILURE() << "etcd did not become healthy on " << ip << ":\n" << server->Log();
    return nullptr;
  }
  return server;
}

EtcdServer::~EtcdServer() {
  if (process_) process_->Stop(SIGKILL, std::chrono::seconds(10));
}

bool EtcdServer::Launch() {
  const std::string client = "http://" + ip_ + ":2379";
  const std::string peer = "http://" + ip_ + ":2380";
  process_ = std::make_unique<Process>(
      std::vector<std::string>{kEtcd, "--name", "etcd1", "--data-dir",
                               (dir_.path() / "data").string(), "--listen-client-urls", client,
                               "--advertise-client-urls", client, "--listen-peer-urls", peer,
                               "--initial-advertise-peer-urls", peer, "--initial-cluster",
                               "etcd1=" + peer, "--log-level", "warn"},
      dir_.path() / "etcd.log");
  return WaitFor([this] { return !process_->Alive() || Healthy(); }, std::chrono::seconds(60)) &&
         process_->Alive();
}

bool EtcdServer::Healthy() const {
  return HttpGet(ip_, 2379, "/health", 1000).find("\"health\":\"true\"") != std::string::npos;
}

void EtcdServer::Stop() {
  if (process_) process_->Stop(SIGTERM, std::chrono::seconds(20));
  process_.reset();
}

bool EtcdServer::Restart() {
  Stop();
  return Launch();
}

std::string EtcdServer::Log() const { return ReadFileOrEmpty(dir_.path() / "etcd.log"); }

}  // namespace halite::testing
