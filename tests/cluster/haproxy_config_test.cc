#include "halite/cluster/haproxy_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace halite::cluster {
namespace {

HaproxyOptions TwoMasters() {
  HaproxyOptions o;
  o.bind_address = "127.0.0.1";
  o.masters = {{"127.0.0.2", "127.0.0.2"}, {"m3", "::1"}};
  o.publish_session = std::chrono::seconds(3600);
  o.maxconn = 1000;
  return o;
}

TEST(HaproxyConfigTest, BothSidesCheckHealthAndCutSessionsOfADownMaster) {
  std::string cfg = RenderHaproxyConfig(TwoMasters());
  EXPECT_NE(cfg.find("bind 127.0.0.1:4505\n    timeout client 3600s"), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("bind 127.0.0.1:4506\n    timeout client 60s"), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("server 127.0.0.2 127.0.0.2:4505 check port 4510"), std::string::npos);
  EXPECT_NE(cfg.find("server m3 [::1]:4506 check port 4510"), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("on-marked-down shutdown-sessions"), std::string::npos);
  EXPECT_NE(cfg.find("option redispatch 1\n"), std::string::npos);  // a refused connect moves on
  EXPECT_EQ(std::count(cfg.begin(), cfg.end(), '\n') > 20, true);
  auto at = [&](const std::string& s) { return cfg.find(s); };
  EXPECT_LT(at("backend halite_publish"), at("frontend halite_request"));
  EXPECT_NE(cfg.find("global\n    maxconn 1000\n"), std::string::npos) << cfg;
}

TEST(HaproxyConfigTest, HaproxyAcceptsTheConfig) {
  auto path = std::filesystem::temp_directory_path() /
              ("halite-haproxy-" + std::to_string(::getpid()) + ".cfg");
  std::ofstream(path) << RenderHaproxyConfig(TwoMasters());
  std::string cmd = "/usr/sbin/haproxy -c -q -f " + path.string() + " >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "haproxy -c rejected the generated config";
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace halite::cluster
