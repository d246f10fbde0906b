// Hostile input, what a minion's stored or forwarded data reaches afterwards (issue 12,
// docs/security.md findings 29 and on): the job listings, the markers the job-cache scan
// reads. Each test reproduced its finding first.
#include <gtest/gtest.h>

#include <filesystem>

#include "halite/jobs/jid.h"
#include "halite/wire/event.h"
#include "hostile.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

// `depth` arrays, one inside the other, around an empty one.
wire::Value Nested(int depth) {
  wire::Value v = wire::Value::EmptyArray();
  for (int i = 1; i < depth; ++i) v = wire::Value(wire::Array{std::move(v)});
  return v;
}

// The jid of the job listed with function `fun` ("" when none).
std::string ListedJid(const wire::Value& jobs, const std::string& fun) {
  if (!jobs.map()) return "";
  for (const auto& [jid, job] : *jobs.map()) {
    const std::string* f = job.FindStr("Function");
    if (f && *f == fun && jid.str()) return *jid.str();
  }
  return "";
}

// A job a minion starts itself keeps the arguments it sends, and the master's local socket
// wraps them four levels deeper in a listing. 62 levels of them (a 62-byte `_return`) made
// every jobs.list_jobs, salt-api's GET /jobs and that job's lookup_jid fail for everyone until
// keep_jobs removed the job ("msgpack nesting deeper than 64"), finding 30. A job's
// arguments over 64 KiB are listed as VALUE_TRIMMED, and shown whole by lookup_jid.
TEST_F(HostileTest, AMinionsOwnJobCannotBreakTheJobListings) {
  MasterUnderTest master(tmp_.path(), Spec());
  master.Start();
  auto evil = SignIn(ctx_, master, "evil");
  auto own_job = [&](const std::string& fun, wire::Value arg) {
    auto r = evil.minion->Request(ctx_, evil.session,
                                  wire::Value::MapOf({{"cmd", "_return"},
                                                      {"jid", "req"},
                                                      {"fun", fun},
                                                      {"arg", std::move(arg)},
                                                      {"return", Nested(62)},
                                                      {"retcode", 0},
                                                      {"success", true}}));
    ASSERT_TRUE(r.ok()) << r.error().ToString();
  };
  own_job("test.deep", Nested(62));
  own_job("test.big", wire::Value(wire::Array{std::string(100 << 10, 'b')}));
  auto client = ClientFor(master);
  auto reply = client->ListJobs();
  ASSERT_TRUE(reply.ok()) << reply.error().ToString();
  ASSERT_TRUE(reply->Find("jobs")) << reply->ToJson().substr(0, 400);
  const wire::Value& jobs = *reply->Find("jobs");
  const std::string deep = ListedJid(jobs, "test.deep");
  const std::string big = ListedJid(jobs, "test.big");
  ASSERT_FALSE(deep.empty()) << jobs.ToJson().substr(0, 400);
  ASSERT_FALSE(big.empty()) << jobs.ToJson().substr(0, 400);
  EXPECT_EQ(jobs.Find(big)->Find("Arguments")->ToJson(), "\"VALUE_TRIMMED\"");
  auto looked = client->LookupJid(deep);
  ASSERT_TRUE(looked.ok()) << looked.error().ToString();
  EXPECT_NE(looked->ToJson().find("evil"), std::string::npos);
  auto whole = client->LookupJid(big);
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  EXPECT_NE(whole->ToJson().find(std::string(100 << 10, 'b')), std::string::npos);
  // The CLI the operator runs.
  auto cli = master.Cli("halite-run", {"--out", "json", "jobs.list_jobs"});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find(deep), std::string::npos);
}

// A jid is the minion's choice for a job it starts itself, and each such job left a marker
// for the job-cache scan that every master lists each second; one from far in the future
// never expired, so a minion could grow that directory without end (finding 31). Such jobs
// get no marker (no scan publishes them); their returns are stored as before.
TEST_F(HostileTest, AMinionsOwnJobsLeaveNoMarkersForTheScan) {
  MasterUnderTest master(tmp_.path(), Spec());
  master.Start();
  auto evil = SignIn(ctx_, master, "evil");
  std::vector<std::string> jids;
  for (int i = 0; i < 20; ++i) {
    jids.push_back("99999999999999999999_" + std::to_string(i));
    auto r = evil.minion->Request(ctx_, evil.session, ReturnLoad(jids.back(), "own"));
    ASSERT_TRUE(r.ok()) << r.error().ToString();
  }
  for (const auto& jid : jids) {
    EXPECT_EQ(Returned(master, jid), std::vector<std::string>{"evil"}) << jid;
  }
  // A job the master publishes still gets one.
  const std::string real = PublishJob(master, "evil");
  std::vector<std::string> markers;
  for (const auto& e : std::filesystem::recursive_directory_iterator(master.dir())) {
    if (e.path().parent_path().filename() == "halite_recent_jobs") {
      markers.push_back(e.path().filename().string());
    }
  }
  EXPECT_EQ(markers, std::vector<std::string>{real});
}

}  // namespace
}  // namespace halite::testing
