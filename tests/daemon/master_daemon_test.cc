// MasterDaemon in this process (src/daemon/master_daemon.cc): a config becomes a running
// master whose sockets, job cache, health and metrics are wired together, reached as an
// operator reaches them: the local client over the ipc sockets and HTTP on health_port.
#include "halite/daemon/master_daemon.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "halite/client/local_client.h"
#include "halite/config/master_config.h"
#include "halite/wire/rsa.h"
#include "loopback.h"
#include "scratch_dir.h"
#include "wait.h"

namespace halite::daemon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using halite::testing::WaitUntil;

// One HTTP/1.0 GET; the whole response (status line, headers, body), or nullopt when the
// connection is refused.
std::optional<std::string> HttpGet(const std::string& ip, std::uint16_t port,
                                   const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + ip + "\r\n\r\n";
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) response.append(buf, n);
  ::close(fd);
  return response;
}

// The value of the metric line that starts with `name` ("name{labels}"), if any.
std::optional<std::string> MetricLine(const std::string& metrics, const std::string& name) {
  for (std::size_t at = 0; (at = metrics.find(name + " ", at)) != std::string::npos;
       at += name.size()) {
    if (at == 0 || metrics[at - 1] == '\n') {
      const auto end = metrics.find('\n', at);
      return metrics.substr(at + name.size() + 1, end - at - name.size() - 1);
    }
  }
  return std::nullopt;
}

class MasterDaemonTest : public ::testing::Test {
 protected:
  void TearDown() override { daemon_.reset(); }

  // The YAML an operator would write, with this test's directories and address.
  std::string Yaml(const std::string& extra = "") {
    return "id: m1\ninterface: " + ip_ +
           "\nhealth_port: 4510\nkeysize: 2048\nroot_dir: " + dir_.string() +
           "\npki_dir: /pki\ncachedir: /cache\nsock_dir: /sock\n" + "worker_threads: 2\n" + extra;
  }
  Result<std::unique_ptr<MasterDaemon>> Create(const std::string& yaml) {
    auto loaded = config::ParseMasterConfig(yaml);
    if (!loaded.ok()) return loaded.error();
    return MasterDaemon::Create(std::move(loaded->config));
  }
  void StartMaster(const std::string& extra = "") {
    auto daemon = Create(Yaml(extra));
    ASSERT_TRUE(daemon.ok()) << daemon.error().ToString();
    daemon_ = std::move(*daemon);
    halite::Status started = daemon_->Start();
    ASSERT_TRUE(started.ok()) << started.error().ToString();
  }
  // An accepted key, as `halite-key -a` leaves it: '*' now matches `id`.
  void AcceptKey(const std::string& id) {
    auto key = wire::RsaPrivateKey::Generate(2048);
    ASSERT_TRUE(key.ok());
    fs::create_directories(dir_ / "pki" / "minions");
    std::ofstream(dir_ / "pki" / "minions" / id) << key->PublicKey().ToPem();
  }
  std::unique_ptr<client::LocalClient> Client(std::chrono::milliseconds timeout = 10s) {
    client::ClientOptions options;
    options.sock_dir = (dir_ / "sock").string();
    options.cachedir = (dir_ / "cache").string();
    options.request_timeout = timeout;
    auto client = client::LocalClient::Connect(options);
    EXPECT_TRUE(client.ok()) << client.error().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }
  std::string Metrics() { return HttpGet(ip_, 4510, "/metrics").value_or(""); }

  halite::testing::ScratchDir scratch_{"halite-daemon"};
  const fs::path dir_ = scratch_.path();
  std::string ip_ = halite::testing::UniqueLoopbackIp();
  std::unique_ptr<MasterDaemon> daemon_;
};

TEST_F(MasterDaemonTest, TheConfigsDirectoriesHoldTheKeysAndSocketsOfTheRunningMaster) {
  StartMaster();
  AcceptKey("web1");
  // root_dir went in front of every path, as Salt does.
  EXPECT_TRUE(fs::exists(dir_ / "pki" / "master.pem"));
  EXPECT_TRUE(fs::exists(dir_ / "pki" / "master.pub"));
  EXPECT_TRUE(fs::exists(dir_ / "cache" / ".root_key"));
  EXPECT_TRUE(fs::exists(dir_ / "sock" / "halite_req.ipc"));
  EXPECT_TRUE(fs::exists(dir_ / "sock" / "halite_event_pub.ipc"));
  // The request server, the event bus and the job cache answer the local client.
  auto client = Client();
  ASSERT_NE(client, nullptr);
  halite::Status subscribed = client->SubscribeEvents();
  ASSERT_TRUE(subscribed.ok()) << subscribed.error().ToString();
  client::PublishRequest request;
  request.tgt = wire::Value("*");
  request.fun = "test.ping";
  auto job = client->Publish(request);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  EXPECT_EQ(job->jid.size(), 20u) << job->jid;
  EXPECT_EQ(job->minions, std::vector<std::string>{"web1"});
  auto jobs = client->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.error().ToString();
  EXPECT_NE(jobs->ToJson().find(job->jid), std::string::npos) << jobs->ToJson();
}

TEST_F(MasterDaemonTest, HealthSaysHealthyOnceTheFirstCheckHasRun) {
  StartMaster();
  std::string health;
  ASSERT_TRUE(WaitUntil([&] {
    health = HttpGet(ip_, 4510, "/health").value_or("");
    return health.rfind("HTTP/1.1 200", 0) == 0 || health.rfind("HTTP/1.0 200", 0) == 0;
  })) << health;
  EXPECT_NE(health.find(R"("id": "m1")"), std::string::npos) << health;
  EXPECT_NE(health.find(R"("healthy": true)"), std::string::npos) << health;
  EXPECT_NE(health.find(R"("problems": [])"), std::string::npos) << health;
  EXPECT_NE(health.find(R"("connected_minions": 0)"), std::string::npos) << health;
  EXPECT_EQ(health.find(R"("peers")"), std::string::npos) << "not a cluster: " << health;
}

TEST_F(MasterDaemonTest, MetricsCountWhatTheMasterDid) {
  StartMaster();
  const std::string before = Metrics();
  EXPECT_NE(before.find("# TYPE halite_requests_total counter\n"), std::string::npos) << before;
  EXPECT_NE(before.find("# TYPE halite_job_cache_write_seconds histogram\n"), std::string::npos);
  EXPECT_EQ(MetricLine(before, R"(halite_publishes_total{master="m1"})"), "0") << before;
  EXPECT_EQ(MetricLine(before, R"(halite_requests_total{master="m1",cmd="publish"})"), "0");
  EXPECT_EQ(MetricLine(before, R"(halite_auth_total{master="m1",result="accepted"})"), "0");
  EXPECT_EQ(MetricLine(before, R"(halite_request_queue{master="m1"})"), "0");

  AcceptKey("web1");
  auto client = Client();
  ASSERT_NE(client, nullptr);
  client::PublishRequest request;
  request.tgt = wire::Value("*");
  request.fun = "test.ping";
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(client->Publish(request).ok());
  const std::string after = Metrics();
  EXPECT_EQ(MetricLine(after, R"(halite_publishes_total{master="m1"})"), "2") << after;
  EXPECT_EQ(MetricLine(after, R"(halite_requests_total{master="m1",cmd="publish"})"), "2");
  // Every sample has its HELP and TYPE lines, once.
  for (const char* name : {"halite_publishes_total", "halite_returns_total",
                           "halite_requests_shed_total", "halite_rsa_operations_total"}) {
    const std::string help = std::string("# HELP ") + name + " ";
    const auto first = after.find(help);
    EXPECT_NE(first, std::string::npos) << name;
    EXPECT_EQ(after.find(help, first + 1), std::string::npos) << name;
  }
  EXPECT_EQ(HttpGet(ip_, 4510, "/nope").value_or("").substr(9, 3), "404");
}

TEST_F(MasterDaemonTest, AnUnknownJobCacheIsRefusedBeforeAnythingListens) {
  auto daemon = Create(Yaml("master_job_cache: nope\n"));
  ASSERT_FALSE(daemon.ok());
  EXPECT_NE(daemon.error().message.find("nope"), std::string::npos) << daemon.error().ToString();
  EXPECT_FALSE(fs::exists(dir_ / "sock" / "halite_req.ipc"));
  EXPECT_EQ(HttpGet(ip_, 4510, "/health"), std::nullopt);
}

TEST_F(MasterDaemonTest, StopClosesTheRequestAndHealthSockets) {
  StartMaster();
  auto client = Client(500ms);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->ListJobs().ok());
  ASSERT_TRUE(HttpGet(ip_, 4510, "/metrics").has_value());
  daemon_->Stop();
  EXPECT_EQ(HttpGet(ip_, 4510, "/health"), std::nullopt);
  auto after = client->ListJobs();
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code, ErrorCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace halite::daemon
