// `show servers state` as HAProxy 2.6 prints it (captured from Debian 12's haproxy). The sync
// itself runs against a real HAProxy in tests/integration/etcd_membership_test.cc.
#include "halite/cluster/haproxy_runtime.h"

#include <gtest/gtest.h>

namespace halite::cluster {
namespace {

constexpr const char* kState =
    "1\n"
    "# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
    "srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health "
    "srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord "
    "srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n"
    "3 halite_publish 2 m2 127.0.250.4 0 0 1 1 8 8 2 0 6 0 0 0 - 4505 - 0 4511 - - 4510\n"
    "3 halite_publish 1 m1 ::1 0 1 1 1 1 1 0 0 2 0 0 0 - 4505 - 0 4510 - - 4510\n"
    "\n";

TEST(HaproxyRuntimeTest, ParsesServersStateByColumnName) {
  auto servers = ParseServersState(kState);
  ASSERT_TRUE(servers.ok()) << servers.error().ToString();
  ASSERT_EQ(servers->size(), 2u);
  EXPECT_EQ((*servers)[0].backend, "halite_publish");
  EXPECT_EQ((*servers)[0].name, "m2");
  EXPECT_EQ((*servers)[0].address, "127.0.250.4");
  EXPECT_EQ((*servers)[0].port, 4505);
  EXPECT_EQ((*servers)[0].check_port, 4511);
  EXPECT_EQ((*servers)[0].admin_state, 0);
  EXPECT_EQ((*servers)[1].address, "::1");
  EXPECT_EQ((*servers)[1].admin_state, 1);  // in maintenance
}

TEST(HaproxyRuntimeTest, AnythingButFormatOneIsAnError) {
  EXPECT_FALSE(ParseServersState("").ok());
  EXPECT_FALSE(ParseServersState("Unknown command.\n").ok());
  EXPECT_FALSE(ParseServersState("1\n# be_id be_name\n3 halite_publish\n").ok());
  auto empty = ParseServersState("1\n# be_id be_name srv_id srv_name\n\n");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(HaproxyRuntimeTest, NoSocketIsUnavailable) {
  auto answer = MakeHaproxySocket("/nonexistent/haproxy.sock")->Command("show info");
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace halite::cluster
