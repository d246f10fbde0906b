// Minions that publish to minions and run runners (master/peer.h), over the request port as
// a stock 3006/3007 minion's publish.publish, publish.full_data and publish.runner send them
// (salt/modules/publish.py: minion_pub, then pub_ret until every minion answered;
// minion_runner), with a real halite-minion answering the jobs. One master for every case.
// halite-cp (salt-cp) against the same minion. And `job_cache: False` (Salt's: returns go to
// the event bus only) on a second master.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <zmq.hpp>

#include "harness.h"
#include "raw_client.h"
#include "test_keys.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

class PeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MasterSpec spec;
    spec.auto_accept = true;
    spec.extra_yaml =
        "peer:\n"
        "  'asker.*':\n"
        "    - test.echo\n"
        "    - 'test.ping'\n"
        "peer_run:\n"
        "  'asker.*': ['manage.up', 'cache.grains']\n"
        "timeout: 2\n"
        "gather_job_timeout: 1\n";
    master_ = std::make_unique<MasterUnderTest>(tmp_.path(), spec);
    master_->Start();
    MinionSpec m;
    m.id = "target1";
    m.master_ip = master_->ip();
    target_ = std::make_unique<MinionUnderTest>(tmp_.path(), m);
    target_->Start();
    std::string last;
    ASSERT_TRUE(EveryMinionAnswers(*master_, "target1", {"test.ping"}, 1, &last)) << last;
  }

  struct SignedIn {
    std::unique_ptr<RawMinion> minion;
    std::optional<wire::Crypticle> session;
  };
  SignedIn SignIn(const std::string& id) {
    auto minion = std::make_unique<RawMinion>(id, NewKey(), RetEndpoint(*master_));
    auto auth = minion->Auth(ctx_, MasterPub(*master_));
    EXPECT_TRUE(auth.ok() && auth->session) << (auth.ok() ? "no session" : auth.error().message);
    std::optional<wire::Crypticle> session;
    if (auth.ok()) session = auth->session;
    return {std::move(minion), std::move(session)};
  }

  // The load publish.publish sends (publish.py's _publish).
  static wire::Value MinionPub(const std::string& id, const std::string& tgt,
                               const std::string& fun, wire::Array arg,
                               const std::string& form = "clean") {
    return wire::Value::MapOf({{"cmd", "minion_pub"},
                               {"fun", fun},
                               {"arg", wire::Value(std::move(arg))},
                               {"tgt", tgt},
                               {"tgt_type", "glob"},
                               {"ret", ""},
                               {"tmo", 5},
                               {"form", form},
                               {"id", id},
                               {"no_parse", wire::Value::EmptyArray()}});
  }
  static wire::Value PubRet(const std::string& id, const std::string& jid) {
    return wire::Value::MapOf({{"cmd", "pub_ret"}, {"id", id}, {"jid", jid}});
  }

  Result<wire::Value> Send(SignedIn& who, wire::Value load) {
    if (!who.session) return Error::FailedPrecondition("not signed in");
    return who.minion->Request(ctx_, *who.session, std::move(load));
  }

  // pub_ret from `who` (as `id`) until target1 has returned for `jid`: the returns then, or
  // nil (with a test failure) when it did not.
  wire::Value ReturnsOnceTargetAnswers(SignedIn& who, const std::string& id,
                                       const std::string& jid) {
    wire::Value returns;
    EXPECT_TRUE(WaitFor([&] {
      auto r = Send(who, PubRet(id, jid));
      if (!r.ok() || !r->Find("target1")) return false;
      returns = *r;
      return true;
    })) << master_->Log();
    return returns;
  }

  TempDir tmp_;
  zmq::context_t ctx_;
  std::unique_ptr<MasterUnderTest> master_;
  std::unique_ptr<MinionUnderTest> target_;
};

TEST_F(PeerTest, PublishPublishRunsWhatPeerAllowsAndOnlyItsPublisherReadsTheReturns) {
  SignedIn asker = SignIn("asker1");
  SignedIn other = SignIn("other1");
  // publish.publish 'target*' test.echo 'hello': the arg YAML-loaded by the minion, a kwarg
  // split by the master's parse_input.
  auto pub = Send(asker, MinionPub("asker1", "target*", "test.echo", {wire::Value("hello")}));
  ASSERT_TRUE(pub.ok()) << pub.error().ToString();
  const std::string* jid = pub->FindStr("jid");
  ASSERT_NE(jid, nullptr) << pub->ToJson();
  EXPECT_EQ(pub->Find("minions")->ToJson(), R"(["target1"])");
  const wire::Value returns = ReturnsOnceTargetAnswers(asker, "asker1", *jid);
  ASSERT_TRUE(returns.Find("target1")) << returns.ToJson();
  // get_cache_returns' shape, which publish.publish reduces to {minion: ret}.
  EXPECT_EQ(returns.ToJson(), R"({"target1": {"ret": "hello"}})");
  // The job names its requester: the pub load's id, as Salt's local client sends it.
  auto job = master_->Cli("halite-run", {"--out", "json", "jobs.list_job", *jid});
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_NE(job.out.find("\"test.echo\""), std::string::npos) << job.out;

  // Another minion, signed in and on no peer entry: the returns are not its to read, and it
  // may publish nothing. Both answered {} as Salt answers them.
  auto stolen = Send(other, PubRet("other1", *jid));
  ASSERT_TRUE(stolen.ok()) << stolen.error().ToString();
  EXPECT_EQ(stolen->ToJson(), "{}");
  auto refused = Send(other, MinionPub("other1", "*", "test.ping", {}));
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->ToJson(), "{}");
  // The allowed minion, out of its ACL: another function, a publish of a publish, a
  // multi-function job with one function not allowed, a pillar glob.
  for (const std::string fun : {"cmd.run", "publish.publish", "test.ping,cmd.run"}) {
    SCOPED_TRACE(fun);
    auto r = Send(asker, MinionPub("asker1", "*", fun, {wire::Value("id")}));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->ToJson(), "{}");
  }
  wire::Value pillar_glob = MinionPub("asker1", "role:*", "test.ping", {});
  pillar_glob.Set("tgt_type", "pillar");
  auto glob = Send(asker, pillar_glob);
  ASSERT_TRUE(glob.ok());
  EXPECT_EQ(glob->ToJson(), "{}");
  // It cannot claim another id: the load's id must be the one its session proves.
  RequestTweaks as_other;
  as_other.load_id = "other1";
  auto forged = asker.minion->Request(ctx_, *asker.session,
                                      MinionPub("other1", "*", "test.ping", {}), as_other);
  EXPECT_FALSE(forged.ok() && forged->FindStr("jid")) << (forged.ok() ? forged->ToJson() : "");
  // A target that matches nobody: jid 0, as Salt's cmd_async gives it.
  auto nobody = Send(asker, MinionPub("asker1", "nobody*", "test.ping", {}));
  ASSERT_TRUE(nobody.ok());
  EXPECT_EQ(nobody->ToJson(), R"({"jid": 0, "minions": []})");
  const std::string log = master_->Log();
  EXPECT_NE(log.find("minion_pub from 'other1' refused"), std::string::npos) << log;
  EXPECT_NE(log.find("pub_ret from 'other1' refused"), std::string::npos) << log;
}

// A kwarg in a peer publish is read by the master as Salt's parse_input reads it, and that
// reader used std::regex, which recursed once per character: a minion the peer ACL allows
// could crash the master with one kwarg of 200,000 digits (finding 13). It is published as
// the string Salt makes of it, and the master goes on answering.
TEST_F(PeerTest, AKwargOfManyDigitsIsPublishedNotACrash) {
  SignedIn asker = SignIn("asker4");
  const std::string digits(200000, '7');
  auto pub =
      Send(asker, MinionPub("asker4", "target1", "test.echo", {wire::Value("text=" + digits)}));
  ASSERT_TRUE(pub.ok()) << pub.error().ToString();
  const std::string* jid = pub->FindStr("jid");
  ASSERT_NE(jid, nullptr) << pub->ToJson();
  const wire::Value returns = ReturnsOnceTargetAnswers(asker, "asker4", *jid);
  ASSERT_TRUE(returns.Find("target1")) << returns.ToJson();
  const wire::Value* ret = returns.Find("target1")->Find("ret");
  ASSERT_NE(ret, nullptr) << returns.ToJson().substr(0, 200);
  EXPECT_EQ(*ret, wire::Value(digits)) << ret->ToJson().substr(0, 80);
}

TEST_F(PeerTest, AMultiFunctionPublishIsSplitAsSaltSplitsIt) {
  SignedIn asker = SignIn("asker2");
  // publish.full_data target1 test.ping,test.echo ',hi': the function names split at commas,
  // each argument at whitespace (Salt's __verify_minion_publish), published as one job.
  auto pub = Send(asker, MinionPub("asker2", "target1", "test.ping,test.echo",
                                   {wire::Value(""), wire::Value("hi there")}, "full"));
  ASSERT_TRUE(pub.ok()) << pub.error().ToString();
  const std::string* jid = pub->FindStr("jid");
  ASSERT_NE(jid, nullptr) << pub->ToJson();
  auto job = master_->Cli("halite-run", {"--out", "json", "jobs.list_job", *jid});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  auto parsed = nlohmann::json::parse(job.out, nullptr, false);
  ASSERT_TRUE(parsed.is_object()) << job.out;
  EXPECT_EQ(parsed["Function"], nlohmann::json::parse(R"(["test.ping", "test.echo"])"));
  EXPECT_EQ(parsed["Arguments"], nlohmann::json::parse(R"([[], ["hi", "there"]])"));
  EXPECT_EQ(parsed["User"], "root");
}

TEST_F(PeerTest, PublishRunnerRunsWhatPeerRunAllows) {
  SignedIn asker = SignIn("asker3");
  SignedIn other = SignIn("other3");
  auto runner = [&](SignedIn& who, const std::string& id, const std::string& fun, wire::Array arg) {
    return Send(who, wire::Value::MapOf({{"cmd", "minion_runner"},
                                         {"fun", fun},
                                         {"arg", wire::Value(std::move(arg))},
                                         {"tmo", 5},
                                         {"id", id},
                                         {"no_parse", wire::Value::EmptyArray()}}));
  };
  // manage.up asks the master (test.ping to every accepted minion): the RawMinions never
  // answer, target1 does.
  auto up = runner(asker, "asker3", "manage.up", {});
  ASSERT_TRUE(up.ok()) << up.error().ToString();
  EXPECT_EQ(up->ToJson(), R"(["target1"])");
  // cache.grains with a kwarg, from the minion data cache.
  auto grains = runner(asker, "asker3", "cache.grains", {wire::Value("tgt=target1")});
  ASSERT_TRUE(grains.ok());
  ASSERT_NE(grains->Find("target1"), nullptr) << grains->ToJson();
  EXPECT_EQ(*grains->Find("target1")->FindStr("id"), "target1");
  // Refused: a runner peer_run does not list, and any runner for a minion it does not name.
  for (auto* who : {&asker, &other}) {
    const std::string id = who == &asker ? "asker3" : "other3";
    auto r = runner(*who, id, who == &asker ? "cache.clear_all" : "manage.up", {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->ToJson(), "{}") << id;
  }
  EXPECT_NE(master_->Log().find("minion_runner from 'other3' refused"), std::string::npos);
}

// halite-cp as salt-cp: a tree (a file of several chunks, modes, an empty directory, a nested
// file) and a single file, pushed to a halite-minion on this host.
TEST_F(PeerTest, HaliteCpPushesFilesInChunksWithTheirModes) {
  namespace fs = std::filesystem;
  const fs::path tree = tmp_.path() / "src" / "tree";
  std::string big;
  std::uint32_t x = 12345;
  for (std::size_t i = 0; i < 98304 * 3 + 5; ++i) {  // three full chunks and a bit
    x = x * 1103515245u + 12345u;
    big.push_back(static_cast<char>(x >> 24));
  }
  WriteFile(tree / "big.bin", big);
  WriteFile(tree / "run.sh", "#!/bin/sh\necho hi\n");
  fs::permissions(tree / "run.sh", fs::perms(0750));
  WriteFile(tree / "sub" / "deep" / "note.txt", "note\n");
  // Its one chunk is H4sIAAAAAAACA8vI5AIAenpv7QMAAAA=, which a minion would take for a
  // key=value argument if it were sent as a positional string.
  WriteFile(tree / "sub" / "hi.txt", "hi\n");
  fs::create_directories(tree / "sub" / "empty");
  WriteFile(tmp_.path() / "src" / "single.txt", "single\n");
  const fs::path dest = tmp_.path() / "on-minion";
  auto r =
      master_->Cli("halite-cp", {"-C", "target1", tree.string(),
                                 (tmp_.path() / "src" / "single.txt").string(), dest.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string d = dest.string();
  EXPECT_EQ(r.out,
            "target1:\n    ----------\n    " + d + "/single.txt:\n        True\n    " + d +
                "/tree/big.bin:\n        True\n    " + d + "/tree/run.sh:\n        True\n    " + d +
                "/tree/sub/deep/note.txt:\n        True\n    " + d +
                "/tree/sub/empty:\n        True\n    " + d + "/tree/sub/hi.txt:\n        True\n")
      << r.out;
  EXPECT_EQ(ReadFileOrEmpty(dest / "tree" / "big.bin"), big);
  EXPECT_EQ(ReadFileOrEmpty(dest / "tree" / "sub" / "deep" / "note.txt"), "note\n");
  EXPECT_EQ(ReadFileOrEmpty(dest / "single.txt"), "single\n");
  EXPECT_EQ(ReadFileOrEmpty(dest / "tree" / "sub" / "hi.txt"), "hi\n");
  EXPECT_EQ(fs::status(dest / "tree" / "run.sh").permissions() & fs::perms::mask, fs::perms(0750));
  EXPECT_TRUE(fs::is_directory(dest / "tree" / "sub" / "empty"));

  // One file to a file name, uncompressed; then nobody matched, and a missing source.
  auto one = master_->Cli("halite-cp", {"-n", "--out", "json", "-L", "target1",
                                        (tmp_.path() / "src" / "single.txt").string(),
                                        (dest / "renamed.txt").string()});
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  EXPECT_EQ(ReadFileOrEmpty(dest / "renamed.txt"), "single\n");
  EXPECT_NE(one.out.find("\"" + (dest / "renamed.txt").string() + "\": true"), std::string::npos)
      << one.out;
  auto nobody = master_->Cli("halite-cp", {"nobody*", tree.string(), d});
  EXPECT_EQ(nobody.exit_code, 2) << nobody.out << nobody.err;
  auto missing = master_->Cli("halite-cp", {"target1", (tmp_.path() / "nope").string(), d});
  EXPECT_EQ(missing.exit_code, 42);
  EXPECT_EQ(missing.err, (tmp_.path() / "nope").string() + " does not exist\n");
}

TEST(JobCacheOffTest, ReturnsReachTheCliButAreNotStored) {
  TempDir tmp;
  MasterSpec spec;
  spec.auto_accept = true;
  spec.extra_yaml = "job_cache: False\n";
  MasterUnderTest master(tmp.path(), spec);
  master.Start();
  MinionSpec m;
  m.id = "nocache1";
  m.master_ip = master.ip();
  MinionUnderTest minion(tmp.path(), m);
  minion.Start();
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(master, "nocache1", {"test.ping"}, 1, &last)) << last;
  auto run = master.Cli("halite", {"--show-jid", "--out", "json", "nocache1", "test.echo", "x"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find(R"("nocache1": "x")"), std::string::npos) << run.out;
  std::smatch jid;
  ASSERT_TRUE(std::regex_search(run.out, jid, std::regex("jid: ([0-9]{20})"))) << run.out;
  // The job is kept (Salt saves the load when it publishes); its returns are not.
  auto job = master.Cli("halite-run", {"--out", "json", "jobs.list_job", jid[1].str()});
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_NE(job.out.find("\"test.echo\""), std::string::npos) << job.out;
  auto lookup = master.Cli("halite-run", {"--out", "json", "jobs.lookup_jid", jid[1].str()});
  EXPECT_EQ(lookup.exit_code, 0) << lookup.err;
  EXPECT_EQ(lookup.out, "{}\n") << lookup.out;
  EXPECT_EQ(master.Log().find("job_cache: not supported"), std::string::npos);
}

}  // namespace
}  // namespace halite::testing
