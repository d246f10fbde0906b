#include "halite/api/api_options.h"

#include <gtest/gtest.h>

#include "halite/config/yaml.h"

namespace halite::api {
namespace {

Result<ApiOptions> Parse(const std::string& text) {
  auto node = config::ParseYaml(text);
  EXPECT_TRUE(node.ok());
  return ParseApiOptions(*node);
}

TEST(ApiOptionsTest, SaltApiDefaultsNeedTlsFiles) {
  auto none = Parse("rest_cherrypy:\n  port: 8000\n");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("ssl_crt"), std::string::npos);
  auto tls = Parse("rest_cherrypy:\n  ssl_crt: /c.pem\n  ssl_key: /k.pem\n");
  ASSERT_TRUE(tls.ok());
  EXPECT_EQ(tls->host, "0.0.0.0");
  EXPECT_EQ(tls->port, 8000);
  EXPECT_TRUE(tls->netapi_enable_clients.empty());
  EXPECT_EQ(tls->max_request_body_size, 1048576u);
}

TEST(ApiOptionsTest, SaltGuisSettingsAreRead) {
  auto o = Parse(
      "netapi_enable_clients: [local, runner, wheel]\n"
      "rest_cherrypy:\n  host: 127.0.0.1\n  port: 3333\n  disable_ssl: True\n"
      "  app: /srv/saltgui/index.html\n  static: /srv/saltgui/static\n  static_path: static/\n");
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->port, 3333);
  EXPECT_EQ(o->app, "/srv/saltgui/index.html");
  EXPECT_EQ(o->static_dir, "/srv/saltgui/static");
  EXPECT_EQ(o->static_path, "/static");
  EXPECT_EQ(o->app_path, "/app");
  EXPECT_EQ(o->netapi_enable_clients, (std::set<std::string>{"local", "runner", "wheel"}));
}

TEST(ApiOptionsTest, BadValuesAreNamed) {
  auto o = Parse("rest_cherrypy:\n  disable_ssl: True\n  port: 99999\n");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("rest_cherrypy.port"), std::string::npos);
}

}  // namespace
}  // namespace halite::api
