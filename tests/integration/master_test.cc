// halite-master over real sockets, driven the way minions and operators drive it.
#include <gtest/gtest.h>

#include <zmq.hpp>

#include "halite/keys/fs.h"
#include "halite/wire/encoding.h"
#include "halite/wire/event.h"
#include "harness.h"
#include "raw_client.h"
#include "test_keys.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

MasterSpec Spec(std::string id, bool auto_accept = false, std::string extra_yaml = "") {
  MasterSpec spec;
  spec.id = std::move(id);
  spec.auto_accept = auto_accept;
  spec.extra_yaml = std::move(extra_yaml);
  return spec;
}

class MasterTest : public ::testing::Test {
 protected:
  TempDir tmp_;
  zmq::context_t ctx_;
};

TEST_F(MasterTest, KeyLifecyclePendingAcceptRejectDenyOverTheWire) {
  MasterUnderTest master(tmp_.path(), Spec("m1"));
  master.Start();
  const auto master_pub = MasterPub(master);

  RawMinion web("web1", NewKey(), RetEndpoint(master));
  auto pending = web.Auth(ctx_, master_pub);
  ASSERT_TRUE(pending.ok()) << pending.error().ToString();
  EXPECT_TRUE(pending->signature_ok);
  EXPECT_EQ(pending->inner.Find("ret")->boolean(), std::optional<bool>(true));
  EXPECT_FALSE(pending->aes.has_value());

  auto listed = master.Cli("halite-key", {"-L"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("Unaccepted Keys:\nweb1\n"), std::string::npos) << listed.out;

  auto accepted = master.Cli("halite-key", {"-a", "web1", "--yes"});
  ASSERT_EQ(accepted.exit_code, 0) << accepted.out << accepted.err;
  auto ok = web.Auth(ctx_, master_pub);
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_TRUE(ok->signature_ok);
  ASSERT_TRUE(ok->aes.has_value());
  ASSERT_TRUE(ok->session.has_value());
  EXPECT_EQ(*ok->inner.FindStr("pub_key"), wire::CleanKey(master_pub.ToPem()));
  EXPECT_EQ(ok->inner.Find("publish_port")->int64(), std::optional<std::int64_t>(4505));

  // The same id with another key is recorded as denied and refused.
  RawMinion impostor("web1", NewKey(), RetEndpoint(master));
  auto denied = impostor.Auth(ctx_, master_pub);
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->inner.Find("ret")->boolean(), std::optional<bool>(false));
  EXPECT_FALSE(denied->aes.has_value());
  EXPECT_TRUE(std::filesystem::exists(master.dir() / "pki" / "minions_denied" / "web1"));
  // ...while the real key still works.
  EXPECT_TRUE(web.Auth(ctx_, master_pub)->aes.has_value());

  RawMinion db("db1", NewKey(), RetEndpoint(master));
  ASSERT_TRUE(db.Auth(ctx_, master_pub).ok());
  auto rejected_cli = master.Cli("halite-key", {"-r", "db1", "--yes"});
  ASSERT_EQ(rejected_cli.exit_code, 0) << rejected_cli.out;
  auto rejected = db.Auth(ctx_, master_pub);
  ASSERT_TRUE(rejected.ok());
  EXPECT_EQ(rejected->inner.Find("ret")->boolean(), std::optional<bool>(false));
  auto listed_after = master.Cli("halite-key", {"-L"});
  EXPECT_NE(listed_after.out.find("Accepted Keys:\nweb1\n"), std::string::npos);
  EXPECT_NE(listed_after.out.find("Rejected Keys:\ndb1\n"), std::string::npos);
  EXPECT_NE(listed_after.out.find("Denied Keys:\nweb1\n"), std::string::npos);

  // Deleting an accepted key: its v3 requests stop being served.
  auto deleted = master.Cli("halite-key", {"-d", "web1", "--yes"});
  ASSERT_EQ(deleted.exit_code, 0);
  auto after_delete =
      web.Request(ctx_, *ok->session, wire::Value::MapOf({{"cmd", "_master_opts"}}));
  ASSERT_FALSE(after_delete.ok());
  // Answered "bad load" (what makes a minion sign in again), not merely unanswered.
  EXPECT_EQ(after_delete.error().code, ErrorCode::kUnauthenticated)
      << after_delete.error().ToString();
}

// Issue 16: a replay leaves out the minions whose return the master saw, so a minion that
// restarted (its jid queue lives in memory) does not run a finished job again when its new
// subscription makes the master re-publish the jobs still within their window.
TEST_F(MasterTest, ARestartedMinionIsNotSentAgainAJobItAlreadyReturned) {
  MasterSpec spec = Spec("m1", true);
  spec.health_port = 4510;
  MasterUnderTest master(tmp_.path(), spec);
  master.Start();
  MinionSpec ms;
  ms.id = "web1";
  ms.master_ip = master.ip();
  MinionUnderTest minion(tmp_.path(), ms);
  minion.Start();
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(master, "*", {"test.ping"}, 1, &last)) << last;
  const std::filesystem::path runs = tmp_.path() / "runs";
  auto job = master.Cli("halite", {"-t", "60", "--out", "txt", "web1", "cmd.run",
                                   "echo ran >> " + runs.string() + "; echo done"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  ASSERT_EQ(ReadFileOrEmpty(runs), "ran\n");
  const std::string replayed = "halite_publishes_replayed_total{master=\"m1\"}";
  const double before = Metric(master.ip(), 4510, replayed).value_or(-1);
  ASSERT_GE(before, 0);
  ASSERT_EQ(minion.Stop(), 0);
  minion.Start();
  // Its new subscription makes the master replay the live jobs (the cmd.run among them)...
  ASSERT_TRUE(WaitFor([&] { return Metric(master.ip(), 4510, replayed).value_or(0) > before; }))
      << master.Log();
  // ...before a job published afterwards, which it answers: the replay reached it first.
  ASSERT_TRUE(EveryMinionAnswers(master, "web1", {"test.ping"}, 1, &last)) << last;
  // It was left out of the replay's target, so the job did not run a second time.
  EXPECT_FALSE(WaitFor([&] { return ReadFileOrEmpty(runs) != "ran\n"; }, 3s))
      << ReadFileOrEmpty(runs);
}

// /metrics reports the master's resident memory as the kernel counts it, and the maintenance
// loop trims the heap once a round (loop_interval), counted.
TEST_F(MasterTest, ResidentMemoryAndHeapTrimsAreInMetrics) {
  MasterSpec spec = Spec("m1", true);
  spec.health_port = 4510;
  MasterUnderTest master(tmp_.path(), spec);  // the harness sets loop_interval: 1
  master.Start();
  const std::string trims = "halite_heap_trims_total{master=\"m1\"}";
  double first = -1;
  ASSERT_TRUE(WaitFor([&] { return (first = Metric(master.ip(), 4510, trims).value_or(0)) >= 1; }))
      << master.Log();
  // One more round's trim, a second or so later.
  ASSERT_TRUE(WaitFor([&] { return Metric(master.ip(), 4510, trims).value_or(0) > first; }, 10s))
      << master.Log();
  EXPECT_TRUE(Metric(master.ip(), 4510, "halite_heap_released_bytes_total{master=\"m1\"}"))
      << master.Log();
  const auto took = Metric(master.ip(), 4510, "halite_heap_trim_seconds_total{master=\"m1\"}");
  ASSERT_TRUE(took.has_value());
  EXPECT_GT(*took, 0);  // a trim walks the arenas: never free
  const auto resident = Metric(master.ip(), 4510, "process_resident_memory_bytes{master=\"m1\"}");
  ASSERT_TRUE(resident.has_value());
  // The kernel's own figure, read just after: the same within a factor of two.
  const std::string status = ReadFileOrEmpty("/proc/" + std::to_string(master.pid()) + "/status");
  const auto at = status.find("VmRSS:");
  ASSERT_NE(at, std::string::npos) << status;
  const double kernel = std::atof(status.c_str() + at + 6) * 1024;
  EXPECT_GT(*resident, kernel / 2) << *resident << " against VmRSS " << kernel;
  EXPECT_LT(*resident, kernel * 2) << *resident << " against VmRSS " << kernel;
}

TEST_F(MasterTest, ReturnIsStoredAndVisibleAfterTheCliExits) {
  MasterUnderTest master(tmp_.path(), Spec("m1", true));
  master.Start();
  RawMinion web("web1", NewKey(), RetEndpoint(master));
  auto auth = web.Auth(ctx_, MasterPub(master));
  ASSERT_TRUE(auth.ok() && auth->session) << (auth.ok() ? "no session" : auth.error().ToString());

  auto published = master.Cli("halite", {"--async", "*", "test.ping"});
  ASSERT_EQ(published.exit_code, 0) << published.err;
  auto pos = published.out.find("job ID: ");
  ASSERT_NE(pos, std::string::npos) << published.out;
  std::string jid = published.out.substr(pos + 8, 20);

  wire::Value ret = wire::Value::MapOf({{"cmd", "_return"},
                                        {"id", "web1"},
                                        {"success", true},
                                        {"return", true},
                                        {"retcode", 0},
                                        {"jid", jid},
                                        {"fun", "test.ping"},
                                        {"fun_args", wire::Value::EmptyArray()}});
  auto ack = web.Request(ctx_, *auth->session, ret);
  ASSERT_TRUE(ack.ok()) << ack.error().ToString();
  EXPECT_TRUE(ack->is_nil());
  // A retried return is acknowledged again and stored once.
  ASSERT_TRUE(web.Request(ctx_, *auth->session, ret).ok());

  auto lookup = master.Cli("halite-run", {"--out", "json", "jobs.lookup_jid", jid});
  ASSERT_EQ(lookup.exit_code, 0) << lookup.err;
  EXPECT_NE(lookup.out.find("\"web1\": true"), std::string::npos) << lookup.out;
  auto jobs = master.Cli("halite-run", {"--out", "json", "jobs.list_jobs"});
  EXPECT_NE(jobs.out.find(jid), std::string::npos);
  EXPECT_NE(jobs.out.find("\"Function\": \"test.ping\""), std::string::npos) << jobs.out;
}

TEST_F(MasterTest, GarbageAndOversizedFramesGetAnErrorWhileOthersAreServed) {
  MasterUnderTest master(tmp_.path(), Spec("m1", true, "max_request_bytes: 65536\n"));
  master.Start();
  const std::string ep = RetEndpoint(master);
  const std::string bad_load = wire::Pack(wire::Value("bad load"));
  for (const std::string& garbage :
       {std::string("\xc1\xff\x00garbage", 10), std::string("not msgpack at all"),
        wire::Pack(wire::Value(42)), wire::Pack(wire::Value::MapOf({{"enc", "aes"}})),
        wire::Pack(wire::Value::MapOf({{"enc", "aes"}, {"load", "xx"}, {"version", 3}})),
        wire::Pack(wire::Value::MapOf(
            {{"enc", "aes"}, {"load", "xx"}, {"version", 3}, {"id", "../../etc"}})),
        std::string(100000, 'x'),  // over max_request_bytes: answered, never parsed
        std::string()}) {
    auto reply = RequestOnce(ctx_, ep, garbage);
    ASSERT_TRUE(reply.has_value()) << "no answer to garbage of size " << garbage.size();
    EXPECT_EQ(*reply, bad_load);
  }
  // Far over the limit: the connection is dropped without buffering the frame.
  EXPECT_FALSE(RequestOnce(ctx_, ep, std::string(8 << 20, 'y'), 3s).has_value());
  // A truncated DEALER message (no delimiter) does not wedge the server either.
  {
    zmq::socket_t dealer(ctx_, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect(ep);
    dealer.send(zmq::str_buffer("\x92\x01"), zmq::send_flags::none);
  }
  // The master still serves a real minion.
  RawMinion web("web1", NewKey(), ep);
  auto auth = web.Auth(ctx_, MasterPub(master));
  ASSERT_TRUE(auth.ok());
  EXPECT_TRUE(auth->session.has_value());
  auto opts = web.Request(ctx_, *auth->session, wire::Value::MapOf({{"cmd", "_master_opts"}}));
  ASSERT_TRUE(opts.ok()) << opts.error().ToString();
  EXPECT_NE(opts->Find("file_roots"), nullptr);
}

TEST_F(MasterTest, MinionEventsCannotPoseAsPeersKeysOrOtherMinionsReturns) {
  MasterUnderTest master(tmp_.path(), Spec("m1", true));
  master.Start();
  RawMinion web("web1", NewKey(), RetEndpoint(master));
  auto auth = web.Auth(ctx_, MasterPub(master));
  ASSERT_TRUE(auth.ok() && auth->session);
  // Subscribe to everything on the local bus.
  zmq::socket_t sub(ctx_, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "");
  sub.connect("ipc://" + (master.dir() / "sock" / "halite_event_pub.ipc").string());
  auto send_event = [&](const std::string& tag, wire::Value data) {
    auto r = web.Request(ctx_, *auth->session,
                         wire::Value::MapOf({{"cmd", "_minion_event"},
                                             {"id", "web1"},
                                             {"pretag", wire::Value()},
                                             {"tag", tag},
                                             {"data", std::move(data)}}));
    ASSERT_TRUE(r.ok()) << r.error().ToString();
  };
  auto send_list = [&](wire::Array events) {
    auto r = web.Request(ctx_, *auth->session,
                         wire::Value::MapOf({{"cmd", "_minion_event"},
                                             {"id", "web1"},
                                             {"events", wire::Value(std::move(events))}}));
    ASSERT_TRUE(r.ok()) << r.error().ToString();
  };
  // Tags received on `sub` until `marker` arrives or `timeout` passes (nullopt then).
  auto collect_until =
      [&](const std::string& marker,
          std::chrono::milliseconds timeout) -> std::optional<std::vector<std::string>> {
    std::vector<std::string> seen;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{static_cast<void*>(sub), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 100ms);
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t msg;
      (void)sub.recv(msg);
      auto ev = wire::UnpackEvent(msg.to_string_view());
      if (!ev.ok()) continue;
      if (ev->tag == marker) return seen;
      seen.push_back(ev->tag);
    }
    return std::nullopt;
  };
  // The subscriber is live once one of these allowed events reaches it; only then do the
  // forbidden ones go out, so their absence below means they were not fired.
  bool live = false;
  for (int i = 0; i < 100 && !live; ++i) {
    send_event("custom/live", wire::Value::MapOf({{"n", i}}));
    live = collect_until("custom/live", 200ms).has_value();
  }
  ASSERT_TRUE(live) << "the event bus never delivered an allowed event";
  send_event("cluster/event/m2/salt/job/1/publish", wire::Value::MapOf({{"x", 1}}));
  send_event("salt/job/20250101120000123456/publish",
             wire::Value::MapOf({{"fun", "cmd.run"}, {"tgt", "*"}}));
  send_event("salt/job/20250101120000123456/ret/other", wire::Value::MapOf({{"return", "forged"}}));
  send_event("custom/ok", wire::Value::MapOf({{"__peer_id", "m2"}}));
  {
    auto r = web.Request(ctx_, *auth->session,
                         wire::Value::MapOf({{"cmd", "_minion_event"},
                                             {"id", "web1"},
                                             {"pretag", wire::Value()},
                                             {"tag", "custom/ok"},
                                             {"data", wire::Value::EmptyMap()},
                                             {"__peer_id", "m2"}}));
    ASSERT_TRUE(r.ok());
  }
  send_list(wire::Array{
      wire::Value::MapOf({{"tag", "salt/key"}, {"data", wire::Value::EmptyMap()}}),
      wire::Value::MapOf({{"tag", "cluster/peer/m2"}, {"data", wire::Value::EmptyMap()}})});
  send_event("custom/allowed", wire::Value::MapOf({{"n", 1}}));
  send_event("custom/marker", wire::Value::MapOf({{"n", 1}}));

  // One publisher, one subscriber: events arrive in the order they were fired, so whatever
  // was fired between the live probe and the marker is in `seen`.
  auto seen = collect_until("custom/marker", 15s);
  ASSERT_TRUE(seen.has_value()) << "the allowed marker event never arrived";
  std::vector<std::string> after_live;
  for (const auto& tag : *seen) {
    if (tag != "custom/live") after_live.push_back(tag);
  }
  EXPECT_EQ(after_live, std::vector<std::string>{"custom/allowed"})
      << "an event other than the allowed one was fired";
  for (const auto& tag : *seen) {
    EXPECT_EQ(tag.rfind("cluster/", 0), std::string::npos) << tag;
    EXPECT_EQ(tag.find("/publish"), std::string::npos) << tag;
    EXPECT_EQ(tag.find("/ret/other"), std::string::npos) << tag;
    EXPECT_NE(tag, "salt/key");
    EXPECT_NE(tag, "custom/ok") << "an event carrying __peer_id was fired";
  }
}

TEST_F(MasterTest, MineDataIsStoredAndServedToOtherMinions) {
  MasterUnderTest master(tmp_.path(), Spec("m1", true));
  master.Start();
  RawMinion web("web1", NewKey(), RetEndpoint(master));
  RawMinion db("db1", NewKey(), RetEndpoint(master));
  auto web_auth = web.Auth(ctx_, MasterPub(master));
  auto db_auth = db.Auth(ctx_, MasterPub(master));
  ASSERT_TRUE(web_auth.ok() && web_auth->session && db_auth.ok() && db_auth->session);
  auto stored = web.Request(
      ctx_, *web_auth->session,
      wire::Value::MapOf({{"cmd", "_mine"},
                          {"id", "web1"},
                          {"data", wire::Value::MapOf({{"network.ip_addrs",
                                                        wire::Value(wire::Array{"10.0.0.5"})}})}}));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->boolean(), std::optional<bool>(true));
  auto got = db.Request(ctx_, *db_auth->session,
                        wire::Value::MapOf({{"cmd", "_mine_get"},
                                            {"id", "db1"},
                                            {"tgt", "web*"},
                                            {"fun", "network.ip_addrs"},
                                            {"tgt_type", "glob"}}));
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got->ToJson(), "{\"web1\": [\"10.0.0.5\"]}");
  ASSERT_TRUE(web.Request(ctx_, *web_auth->session,
                          wire::Value::MapOf({{"cmd", "_mine_flush"}, {"id", "web1"}}))
                  .ok());
  auto empty = db.Request(
      ctx_, *db_auth->session,
      wire::Value::MapOf(
          {{"cmd", "_mine_get"}, {"id", "db1"}, {"tgt", "*"}, {"fun", "network.ip_addrs"}}));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->ToJson(), "{}");
}

// Waits until `halite TARGET test.ping` (txt output) lists `expected` lines.
bool AllAnswer(MasterUnderTest& master, std::size_t expected, std::string* last = nullptr) {
  return WaitFor(
      [&] {
        auto r = master.Cli("halite", {"-t", "3", "--out", "txt", "*", "test.ping"});
        if (last) *last = r.out + r.err;
        return r.exit_code == 0 &&
               static_cast<std::size_t>(std::count(r.out.begin(), r.out.end(), '\n')) == expected;
      },
      90s, 500ms);
}

TEST_F(MasterTest, HaliteMinionsV2AndV3ArePendingThenAcceptedThenAnswerJobs) {
  MasterUnderTest master(tmp_.path(), Spec("m1"));
  master.Start();
  MinionSpec v3;
  v3.id = "web1";
  v3.master_ip = master.ip();
  MinionSpec v2 = v3;
  v2.id = "old1";
  v2.protocol = 2;
  MinionUnderTest web(tmp_.path(), v3);
  MinionUnderTest old(tmp_.path(), v2);
  web.Start();
  old.Start();
  ASSERT_TRUE(WaitFor([&] {
    auto l = master.Cli("halite-key", {"-l", "un"});
    return l.out.find("web1") != std::string::npos && l.out.find("old1") != std::string::npos;
  })) << master.Cli("halite-key", {"-L"}).out;
  // Nothing accepted yet: no job goes out (exit 2 and Salt's message, not a timeout's 2 with
  // "did not return" lines or a connection error's 3).
  auto none = master.Cli("halite", {"-t", "2", "*", "test.ping"});
  EXPECT_EQ(none.exit_code, 2) << none.out << none.err;
  EXPECT_EQ(none.out, "No minions matched the target. No command was sent, no jid was assigned.\n");
  EXPECT_EQ(none.err, "ERROR: No return received\n");
  auto accept = master.Cli("halite-key", {"-A", "--yes"});
  ASSERT_EQ(accept.exit_code, 0) << accept.out << accept.err;
  std::string last;
  ASSERT_TRUE(AllAnswer(master, 2, &last)) << last << web.Log() << old.Log();

  auto echo = master.Cli("halite", {"*", "cmd.run", "echo hi"});
  ASSERT_EQ(echo.exit_code, 0) << echo.err;
  // Returns print in arrival order.
  EXPECT_TRUE(echo.out == "old1:\n    hi\nweb1:\n    hi\n" ||
              echo.out == "web1:\n    hi\nold1:\n    hi\n")
      << echo.out;
  auto grain =
      master.Cli("halite", {"--out", "json", "-G", "kernel:Linux", "grains.item", "kernel"});
  ASSERT_EQ(grain.exit_code, 0) << grain.err;
  EXPECT_NE(grain.out.find("\"web1\": {\n        \"kernel\": \"Linux\""), std::string::npos)
      << grain.out;
  auto listed = master.Cli("halite", {"-L", "web1,nope", "test.echo", "hello"});
  EXPECT_EQ(listed.out, "web1:\n    hello\n") << listed.err;
  auto failing = master.Cli("halite", {"web1", "cmd.run_all", "exit 3"});
  EXPECT_EQ(failing.exit_code, 1) << failing.out;
  EXPECT_NE(failing.out.find("retcode:\n        3"), std::string::npos) << failing.out;
  auto missing_fun = master.Cli("halite", {"web1", "no.such"});
  EXPECT_EQ(missing_fun.exit_code, 1);
  EXPECT_NE(missing_fun.out.find("'no.such' is not available."), std::string::npos);
}

TEST_F(MasterTest, MinionsComeBackAfterAMasterRestartWithoutHelp) {
  MasterSpec spec = Spec("m1", true);
  auto master = std::make_unique<MasterUnderTest>(tmp_.path(), spec);
  master->Start();
  spec.ip = master->ip();
  MinionSpec ms;
  ms.id = "web1";
  ms.master_ip = master->ip();
  MinionUnderTest web(tmp_.path(), ms);
  web.Start();
  ASSERT_TRUE(AllAnswer(*master, 1));
  ASSERT_EQ(master->Stop(SIGTERM), 0);
  master = std::make_unique<MasterUnderTest>(tmp_.path(), spec);
  master->Start();
  std::string last;
  EXPECT_TRUE(AllAnswer(*master, 1, &last)) << last << web.Log();
  EXPECT_TRUE(web.Alive());
}

TEST_F(MasterTest, RestartKeepsKeysAndJobHistory) {
  std::string jid;
  MasterSpec spec = Spec("m1", true);
  {
    MasterUnderTest master(tmp_.path(), spec);
    master.Start();
    spec.ip = master.ip();
    RawMinion web("web1", NewKey(), RetEndpoint(master));
    ASSERT_TRUE(web.Auth(ctx_, MasterPub(master)).ok());
    auto published = master.Cli("halite", {"--async", "*", "test.ping"});
    ASSERT_EQ(published.exit_code, 0);
    jid = published.out.substr(published.out.find("job ID: ") + 8, 20);
    EXPECT_EQ(master.Stop(SIGTERM), 0) << master.Log();
  }
  MasterUnderTest again(tmp_.path(), spec);
  again.Start();
  auto listed = again.Cli("halite-key", {"-l", "acc"});
  EXPECT_NE(listed.out.find("web1"), std::string::npos) << listed.out;
  auto jobs = again.Cli("halite-run", {"--out", "json", "jobs.list_jobs"});
  EXPECT_NE(jobs.out.find(jid), std::string::npos) << jobs.out;
}

}  // namespace
}  // namespace halite::testing

namespace halite::testing {
namespace {

TEST_F(MasterTest, DeletingAnAcceptedKeyRotatesTheAesKeyAndLocksThatMinionOut) {
  MasterUnderTest master(tmp_.path(), Spec("m1", true));
  master.Start();
  const auto master_pub = MasterPub(master);
  RawMinion web("web1", NewKey(), RetEndpoint(master));
  RawMinion gone("gone1", NewKey(), RetEndpoint(master));
  auto web_auth = web.Auth(ctx_, master_pub);
  auto gone_auth = gone.Auth(ctx_, master_pub);
  ASSERT_TRUE(web_auth.ok() && web_auth->aes && web_auth->session);
  ASSERT_TRUE(gone_auth.ok() && gone_auth->aes && gone_auth->session);
  const std::string before = web_auth->aes->key_string();
  EXPECT_EQ(gone_auth->aes->key_string(), before);  // one AES key for every minion

  auto deleted = master.Cli("halite-key", {"-d", "gone1", "--yes"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  // The master takes the drop file on its next loop_interval tick (1 s here).
  std::string after;
  ASSERT_TRUE(WaitFor([&] {
    auto again = web.Auth(ctx_, master_pub);
    if (!again.ok() || !again->aes) return false;
    after = again->aes->key_string();
    return after != before;
  })) << "the AES key never changed after a key was deleted";
  EXPECT_FALSE(std::filesystem::exists(master.dir() / "cache" / ".dfn"));
  // web1's session key (per minion) is untouched by the rotation; gone1 is refused.
  auto opts = web.Request(ctx_, *web_auth->session, wire::Value::MapOf({{"cmd", "_master_opts"}}));
  EXPECT_TRUE(opts.ok()) << opts.error().ToString();
  auto locked_out =
      gone.Request(ctx_, *gone_auth->session, wire::Value::MapOf({{"cmd", "_master_opts"}}));
  ASSERT_FALSE(locked_out.ok());
  EXPECT_EQ(locked_out.error().code, ErrorCode::kUnauthenticated);
}

}  // namespace
}  // namespace halite::testing
