#include "halite/cluster/health_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "descriptors.h"
#include "loopback.h"

namespace halite::cluster {
namespace {

TEST(HealthServerTest, ParsesAGetWithHeaders) {
  auto request = ParseHealthRequest("GET /health HTTP/1.1\r\nHost: x\r\nUser-Agent: hc\r\n\r\n");
  ASSERT_TRUE(request.ok()) << request.error().ToString();
  EXPECT_EQ(request->method, "GET");
  EXPECT_EQ(request->target, "/health");
  EXPECT_EQ(request->version, 11u);
}

TEST(HealthServerTest, ParsesHttp10WithABody) {
  auto request = ParseHealthRequest("POST /x HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc");
  ASSERT_TRUE(request.ok()) << request.error().ToString();
  EXPECT_EQ(request->method, "POST");
  EXPECT_EQ(request->version, 10u);
}

TEST(HealthServerTest, IncompleteRequestIsInvalid) {
  for (const char* text : {"", "GET /health HTTP/1.1\r\nHost: x\r\n",
                           "GET /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"}) {
    auto request = ParseHealthRequest(text);
    ASSERT_FALSE(request.ok()) << text;
    EXPECT_EQ(request.error().code, ErrorCode::kInvalidArgument) << text;
  }
}

TEST(HealthServerTest, GarbageIsInvalid) {
  for (const char* text : {"\x16\x03\x01\x02\x00", "GET\r\n\r\n", "GET / HTTP/9.9\r\n\r\n",
                           "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n"}) {
    auto request = ParseHealthRequest(text);
    ASSERT_FALSE(request.ok()) << text;
    EXPECT_EQ(request.error().code, ErrorCode::kInvalidArgument) << text;
  }
}

TEST(HealthServerTest, OversizedHeadOrBodyIsRefused) {
  std::string head = "GET / HTTP/1.1\r\nX: " + std::string(kHealthMaxHeader, 'a') + "\r\n\r\n";
  auto big_head = ParseHealthRequest(head);
  ASSERT_FALSE(big_head.ok());
  EXPECT_EQ(big_head.error().code, ErrorCode::kResourceExhausted);

  std::string body = "POST / HTTP/1.1\r\nContent-Length: " + std::to_string(kHealthMaxBody + 1) +
                     "\r\n\r\n" + std::string(kHealthMaxBody + 1, 'b');
  auto big_body = ParseHealthRequest(body);
  ASSERT_FALSE(big_body.ok());
  EXPECT_EQ(big_body.error().code, ErrorCode::kResourceExhausted);
}

TEST(HealthServerTest, RoutesByMethodAndTarget) {
  int health_calls = 0;
  int metrics_calls = 0;
  HealthServer::HealthFn health = [&] {
    ++health_calls;
    return HealthReport{false, "{}"};
  };
  HealthServer::MetricsFn metrics = [&] {
    ++metrics_calls;
    return std::string("m 1\n");
  };
  EXPECT_EQ(HealthServer::Route({"GET", "/health", 11}, health, metrics).status, 503);
  EXPECT_EQ(HealthServer::Route({"HEAD", "/", 11}, health, metrics).status, 503);
  HealthResponse m = HealthServer::Route({"GET", "/metrics", 11}, health, metrics);
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.body, "m 1\n");
  EXPECT_EQ(HealthServer::Route({"POST", "/health", 11}, health, metrics).status, 405);
  EXPECT_EQ(HealthServer::Route({"GET", "/nope", 11}, health, metrics).status, 404);
  EXPECT_EQ(health_calls, 2);
  EXPECT_EQ(metrics_calls, 1);
}

}  // namespace
}  // namespace halite::cluster

namespace halite::cluster {
namespace {

double ProcessCpuSeconds() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// With no descriptor left, accept fails (EMFILE) and the connection stays in the backlog. The
// server must wait and try again, not retry at once: that spun a core and wrote millions of
// log lines during a 9,900-minion storm. Once descriptors free up, the waiting client is served.
TEST(HealthServerTest, AnAcceptWithNoDescriptorLeftWaitsAndServesOnceOneIsFree) {
  const std::string ip = halite::testing::UniqueLoopbackIp();
  HealthServer server(
      ip, 0,
      [] {
        return HealthReport{true, "{}"};
      },
      [] { return std::string("m 1\n"); });
  ASSERT_TRUE(server.Start().ok());
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  halite::testing::DescriptorExhaustion exhaustion;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server.port());
  ASSERT_EQ(::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr), 1);
  const int connected = ::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
  const ssize_t sent = ::send(client, request.data(), request.size(), MSG_NOSIGNAL);
  // The accept fails over and over while nothing is free: measure what that costs.
  const double cpu0 = ProcessCpuSeconds();
  // Not a wait for anything: the window over which the server's CPU is measured.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double spent = ProcessCpuSeconds() - cpu0;
  exhaustion.Release();
  ASSERT_EQ(exhaustion.error(), EMFILE);
  ASSERT_EQ(connected, 0);
  ASSERT_EQ(sent, static_cast<ssize_t>(request.size()));
  EXPECT_LT(spent, 0.15) << "the accept loop spins while out of descriptors";
  std::string reply;
  char buf[4096];
  timeval tv{10, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  for (ssize_t n; (n = ::recv(client, buf, sizeof(buf), 0)) > 0;) reply.append(buf, n);
  ::close(client);
  EXPECT_NE(reply.find("200"), std::string::npos) << reply;
  EXPECT_NE(reply.find("m 1"), std::string::npos) << reply;
}

}  // namespace
}  // namespace halite::cluster
