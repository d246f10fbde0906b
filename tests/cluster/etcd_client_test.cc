// EtcdClient without an etcd: what a vanished or silent etcd gives (errors, in bounded time),
// and the member record's validation. The calls against a real etcd are covered by
// tests/integration/etcd_membership_test.cc.
#include "halite/cluster/etcd_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "halite/cluster/membership.h"
#include "loopback.h"

namespace halite::cluster {
namespace {

using namespace std::chrono_literals;

TEST(EtcdClientTest, EndpointsMustBeHttpOrHttpsWithAnIpAndAPort) {
  EXPECT_TRUE(CheckEtcdEndpoint("http://127.0.0.1:2379").ok());
  EXPECT_TRUE(CheckEtcdEndpoint("http://[::1]:2379/").ok());
  EXPECT_TRUE(CheckEtcdEndpoint("https://127.0.0.1:2379").ok());
  for (const char* bad :
       {"ftp://127.0.0.1:2379", "https://etcd:2379", "http://etcd:2379", "http://127.0.0.1",
        "127.0.0.1:2379", "http://127.0.0.1:0", "http://127.0.0.1:99999"}) {
    EXPECT_EQ(CheckEtcdEndpoint(bad).error().code, ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(MakeEtcdClient({{}}).ok());
  EXPECT_FALSE(MakeEtcdClient({{"http://etcd:2379"}}).ok());
}

TEST(EtcdClientTest, NobodyListeningIsUnavailableAtOnce) {
  auto client = MakeEtcdClient({{"http://" + halite::testing::UniqueLoopbackIp() + ":2379"}});
  ASSERT_TRUE(client.ok());
  auto range = (*client)->RangePrefix("/halite/members/");
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(range.error().message.find("connect"), std::string::npos) << range.error().message;
}

// A server that accepts the connection and never answers: the call ends at its deadline.
TEST(EtcdClientTest, SilentServerTimesOutInsteadOfHanging) {
  const std::string ip = halite::testing::UniqueLoopbackIp();
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(2379);
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 16), 0);  // the kernel completes handshakes; nobody reads
  auto client = MakeEtcdClient({{"http://" + ip + ":2379"}, 300ms});
  ASSERT_TRUE(client.ok());
  const auto start = std::chrono::steady_clock::now();
  auto lease = (*client)->GrantLease(10s);
  const auto took = std::chrono::steady_clock::now() - start;
  ::close(fd);
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(lease.error().message.find("no answer within 300 ms"), std::string::npos)
      << lease.error().message;
  EXPECT_LT(took, 3s);
}

TEST(MemberRecordTest, RoundTripsAndRejectsWhatCannotBeALink) {
  MemberRecord r{
      "m1",    "127.0.0.5", 4520, 4505, 4506, 4510, "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7",
      "0.1.0", 1700000000};
  r.trees = {{"file_roots/base", "0123456789abcdef"}, {"pillar_roots/base", "fedcba9876543210"}};
  auto back = MemberRecordFromJson(MemberRecordToJson(r));
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(*back, r);
  EXPECT_FALSE(MemberRecordFromJson("not json").ok());
  EXPECT_FALSE(MemberRecordFromJson("[]").ok());
  MemberRecord bad = r;
  bad.address = "master.example.com";
  EXPECT_FALSE(MemberRecordFromJson(MemberRecordToJson(bad)).ok());
  bad = r;
  bad.name = "../etc";
  EXPECT_FALSE(MemberRecordFromJson(MemberRecordToJson(bad)).ok());
  bad = r;
  bad.curve_public_key = "short";
  EXPECT_FALSE(MemberRecordFromJson(MemberRecordToJson(bad)).ok());
  bad = r;
  bad.peer_port = 0;
  EXPECT_FALSE(MemberRecordFromJson(MemberRecordToJson(bad)).ok());
}

}  // namespace
}  // namespace halite::cluster
