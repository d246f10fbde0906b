#include "halite/cluster/health_server.h"

#include <gtest/gtest.h>

#include <string>

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
