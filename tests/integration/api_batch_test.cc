// halite-api's local_batch client as a user drives it: a real halite-master with three
// halite-minions, halite-api started with the master's config, POST / over TCP. The returns
// come back as Salt's netapi gives cmd_batch's generator: one {id: return} per minion in
// "return"; each group is its own job, published with the user's token (the ACL is the
// master's, the ping included).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "harness.h"
#include "http_client.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

constexpr int kApiPort = 8000;

struct BatchServers {
  TempDir tmp;
  std::string ip = UniqueLoopbackIp();
  std::unique_ptr<MasterUnderTest> master;
  std::vector<std::unique_ptr<MinionUnderTest>> minions;
  std::unique_ptr<Process> api;

  BatchServers() {
    MasterSpec spec;
    spec.ip = ip;
    spec.auto_accept = true;
    spec.extra_yaml =
        "netapi_enable_clients: [local_batch, runner]\n"
        "halite_eauth_auto: True\n"
        "external_auth:\n"
        "  auto:\n"
        "    alice: ['.*', '@runner']\n"
        "    tester: ['test.*']\n"
        "    echoer: ['test.echo']\n"
        "    scoped: [{'web*': ['test.*']}]\n"
        "rest_cherrypy:\n"
        "  host: " +
        ip + "\n  port: " + std::to_string(kApiPort) + "\n  disable_ssl: True\n";
    master = std::make_unique<MasterUnderTest>(tmp.path(), spec);
    master->Start();
    for (const char* id : {"web1", "web2", "db1"}) {
      MinionSpec m;
      m.id = id;
      m.master_ip = ip;
      minions.push_back(std::make_unique<MinionUnderTest>(tmp.path(), m));
      minions.back()->Start();
    }
    api = StartHaliteApi(master->config(), tmp.path() / "api.log", [&] {
      return HttpCall(ip, kApiPort, "GET", "/", {}, "", 1s).status == 200;
    });
    std::string last;
    if (!EveryMinionAnswers(*master, "*", {"test.ping"}, 3, &last)) {
      throw std::runtime_error("the minions did not answer: " + last);
    }
  }
};

class ApiBatchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { servers_ = new BatchServers(); }
  static void TearDownTestSuite() {
    delete servers_;
    servers_ = nullptr;
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << "halite-api log:\n" << servers_->api->Log() << std::endl;
  }

  // /run with the eauth credentials in the chunk: each call logs in as `user`.
  static HttpResponse Batch(const std::string& user, Json chunk) {
    chunk["client"] = "local_batch";
    chunk["username"] = user;
    chunk["password"] = "x";
    chunk["eauth"] = "auto";
    return HttpCall(servers_->ip, kApiPort, "POST", "/run", {{"Accept", "application/json"}},
                    Json::array({chunk}).dump(), 60s);
  }
  static Json Body(const HttpResponse& r) { return Json::parse(r.body, nullptr, false); }
  // The ids of a local_batch "return": each item one {id: return}; `value` is every return.
  static std::multiset<std::string> Ids(const Json& ret, const Json& value) {
    std::multiset<std::string> ids;
    for (const Json& item : ret) {
      EXPECT_EQ(item.size(), 1u) << item.dump();
      for (const auto& [id, v] : item.items()) {
        ids.insert(id);
        EXPECT_EQ(v, value) << id;
      }
    }
    return ids;
  }

  static BatchServers* servers_;
};

BatchServers* ApiBatchTest::servers_ = nullptr;

TEST_F(ApiBatchTest, RunsInWindowsOfTheBatchSizeAndReturnsOneItemPerMinion) {
  auto r = Batch("alice", {{"tgt", "*"}, {"fun", "test.echo"}, {"arg", "w2"}, {"batch", "2"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json ret = Body(r)["return"];
  ASSERT_TRUE(ret.is_array()) << r.body;
  EXPECT_EQ(Ids(ret, "w2"), (std::multiset<std::string>{"db1", "web1", "web2"})) << r.body;
  // Every group was its own job on a list of at most 2 minions, published as alice.
  auto jobs = HttpCall(servers_->ip, kApiPort, "POST", "/run", {{"Accept", "application/json"}},
                       Json::array({{{"client", "runner"},
                                     {"fun", "jobs.list_jobs"},
                                     {"username", "alice"},
                                     {"password", "x"},
                                     {"eauth", "auto"}}})
                           .dump());
  ASSERT_EQ(jobs.status, 200) << jobs.body;
  std::multiset<std::string> targeted;
  int groups = 0;
  const Json listed = Body(jobs)["return"][0];
  for (const auto& [jid, job] : listed.items()) {
    if (job["Function"] != "test.echo" || job["Arguments"] != Json::array({"w2"})) continue;
    ++groups;
    EXPECT_EQ(job["Target-type"], "list") << job.dump();
    EXPECT_EQ(job["User"], "alice") << job.dump();
    ASSERT_TRUE(job["Target"].is_array()) << job.dump();
    EXPECT_LE(job["Target"].size(), 2u) << job.dump();
    for (const Json& id : job["Target"]) targeted.insert(id.get<std::string>());
  }
  EXPECT_GE(groups, 2);
  EXPECT_EQ(targeted, (std::multiset<std::string>{"db1", "web1", "web2"}));
}

TEST_F(ApiBatchTest, PercentSizeBatchWaitAndAnEmptyTarget) {
  // 50% of 3 is one minion at a time; batch_wait keeps each freed slot closed for 1 s, so the
  // three groups take at least 2 s.
  const auto start = std::chrono::steady_clock::now();
  auto r =
      Batch("tester", {{"tgt", "*"}, {"fun", "test.ping"}, {"batch", "50%"}, {"batch_wait", "1"}});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Ids(Body(r)["return"], true), (std::multiset<std::string>{"db1", "web1", "web2"}));
  EXPECT_GE(took, 2s);
  // failhard: the first non-zero retcode ends the batch after its return (one of one ran).
  auto hard = Batch(
      "alice",
      {{"tgt", "*"}, {"fun", "cmd.run"}, {"arg", "exit 3"}, {"batch", "1"}, {"failhard", true}});
  ASSERT_EQ(hard.status, 200) << hard.body;
  EXPECT_EQ(Body(hard)["return"].size(), 1u) << hard.body;
  // No minion matches: nothing is yielded.
  auto none = Batch("tester", {{"tgt", "nomatch*"}, {"fun", "test.ping"}, {"batch", "1"}});
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_EQ(Body(none), Json::parse(R"({"return": []})"));
  // A size Salt cannot read: 400 with Salt's text.
  auto bad = Batch("tester", {{"tgt", "*"}, {"fun", "test.ping"}, {"batch", "x"}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("Invalid batch data sent: x"), std::string::npos) << bad.body;
}

TEST_F(ApiBatchTest, TheMastersAclDecidesEveryPublishOfTheBatch) {
  // Not in tester's ACL: refused, as local refuses it.
  auto denied = Batch("tester", {{"tgt", "*"}, {"fun", "cmd.run"}, {"arg", "id"}, {"batch", "1"}});
  EXPECT_EQ(denied.status, 401) << denied.body;
  EXPECT_NE(denied.body.find("Authorization error occurred."), std::string::npos) << denied.body;
  // The batch's test.ping carries the token too (Salt's Batch passes the eauth to it): a user
  // who may run test.echo but not test.ping cannot start a batch.
  auto no_ping = Batch("echoer", {{"tgt", "*"}, {"fun", "test.echo"}, {"arg", "a"}});
  EXPECT_EQ(no_ping.status, 401) << no_ping.body;
  // Target-scoped entries: test.* on web* only.
  auto web = Batch("scoped", {{"tgt", "web*"}, {"fun", "test.echo"}, {"arg", "s"}, {"batch", "1"}});
  ASSERT_EQ(web.status, 200) << web.body;
  EXPECT_EQ(Ids(Body(web)["return"], "s"), (std::multiset<std::string>{"web1", "web2"}));
  auto all = Batch("scoped", {{"tgt", "*"}, {"fun", "test.echo"}, {"arg", "s"}, {"batch", "1"}});
  EXPECT_EQ(all.status, 401) << all.body;
}

}  // namespace
}  // namespace halite::testing
