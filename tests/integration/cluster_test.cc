// Three halite-masters sharing one folder, minions attached to different masters, as in a
// real cluster (issue: master cluster, deliver 5). The scenarios that depend on the shared
// folder (SharedFolderClusterTest) run twice: on a local folder and on a real GlusterFS
// volume with TLS (issue 18, deliver 5 and 6; gluster_volume.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <zmq.hpp>

#include "gluster_volume.h"
#include "halite/jobs/jid.h"
#include "halite/keys/fs.h"
#include "halite/wire/encoding.h"
#include "harness.h"
#include "http_client.h"
#include "raw_client.h"
#include "test_keys.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

class ClusterTest : public ::testing::Test {
 protected:
  // `unreachable_peers`: each master's peer list names an address nobody listens on instead
  // of the others, so no peer link ever comes up (as after a cut of the masters' network).
  void MakeCluster(int n, bool start = true, bool auto_accept = true,
                   bool unreachable_peers = false) {
    for (int i = 0; i < n; ++i) ips_.push_back(UniqueLoopbackIp());
    for (int i = 0; i < n; ++i) {
      MasterSpec spec;
      spec.id = ips_[i];
      spec.ip = ips_[i];
      spec.auto_accept = auto_accept;
      spec.cluster_id = "c1";
      spec.shared_dir = shared_;
      spec.health_port = health_port_;
      if (auto it = extra_yaml_.find(i); it != extra_yaml_.end()) spec.extra_yaml = it->second;
      for (int j = 0; j < n; ++j) {
        if (j != i) spec.cluster_peers.push_back(unreachable_peers ? UniqueLoopbackIp() : ips_[j]);
      }
      specs_.push_back(spec);
      masters_.push_back(std::make_unique<MasterUnderTest>(tmp_.path(), spec));
    }
    if (!start) return;
    for (auto& m : masters_) m->StartAsync();
    for (auto& m : masters_) m->WaitReady();
  }

  MinionUnderTest& AddMinion(const std::string& id, int master_index) {
    MinionSpec spec;
    spec.id = id;
    spec.master_ip = ips_[master_index];
    minions_.push_back(std::make_unique<MinionUnderTest>(tmp_.path(), spec));
    minions_.back()->Start();
    return *minions_.back();
  }

  // Every minion answers a test.ping published on `master`: the cluster is wired up.
  void WaitUntilAllAnswer(MasterUnderTest& master) {
    std::string last;
    ASSERT_TRUE(EveryMinionAnswers(master, "*", {"test.ping"}, minions_.size(), &last))
        << "not every minion answered; last output:\n"
        << last;
  }

  HttpResponse HealthOf(int i) { return HttpCall(ips_[i], 4510, "GET", "/health", {}, "", 5s); }
  // Polls master i's /health until it answers `status` with `needle` in its body (60 s at
  // most); the last answer. A master that has not finished its first check also answers
  // 503, for another reason: the needle tells them apart.
  HttpResponse WaitForHealth(int i, int status, const std::string& needle = "") {
    HttpResponse h;
    WaitFor(
        [&] {
          h = HealthOf(i);
          return h.status == status && h.body.find(needle) != std::string::npos;
        },
        60s, 250ms);
    return h;
  }

  TempDir tmp_;
  // The folder every master shares: cachedir and cluster_pki_dir are under it.
  std::filesystem::path shared_ = tmp_.path() / "shared";
  // When shared_ is on GlusterFS; declared before the masters so it outlives them.
  std::unique_ptr<GlusterVolume> gluster_;
  int health_port_ = 0;                    // 0: no /health
  std::map<int, std::string> extra_yaml_;  // MakeCluster: added to master i's config
  std::vector<std::string> ips_;
  std::vector<MasterSpec> specs_;
  std::vector<std::unique_ptr<MasterUnderTest>> masters_;
  std::vector<std::unique_ptr<MinionUnderTest>> minions_;
  zmq::context_t ctx_;
};

// Where the masters' shared folder lives.
enum class SharedFolder { kLocal, kGlusterFs };

void PrintTo(SharedFolder folder, std::ostream* os) {
  *os << (folder == SharedFolder::kLocal ? "Local" : "GlusterFs");
}

std::string SharedFolderName(const ::testing::TestParamInfo<SharedFolder>& info) {
  return ::testing::PrintToString(info.param);
}

// The scenarios that exercise the shared folder itself: exclusive creates, renames and reads
// of files another master wrote. On GlusterFS the folder is a FUSE mount of a 3-brick replica
// volume with TLS on the I/O and management paths (ctest runs these one at a time: the
// resource lock `glusterfs`).
class SharedFolderClusterTest : public ClusterTest,
                                public ::testing::WithParamInterface<SharedFolder> {
 protected:
  void SetUp() override {
    if (GetParam() != SharedFolder::kGlusterFs) return;
    auto volume = GlusterVolume::Create(UniqueLoopbackIp());
    ASSERT_TRUE(volume.ok()) << volume.error().ToString();
    gluster_ = std::move(*volume);
    shared_ = gluster_->mount() / "shared";
  }
};

TEST_P(SharedFolderClusterTest, JobOnOneMasterReachesMinionsOfAllAndEveryMasterAnswersForIt) {
  MakeCluster(3);
  AddMinion("alpha", 0);
  AddMinion("gamma", 2);
  AddMinion("gamma2", 2);
  WaitUntilAllAnswer(*masters_[1]);

  auto job = masters_[1]->Cli("halite", {"-v", "--out", "txt", "*", "test.echo", "clustered"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  for (const char* id : {"alpha", "gamma", "gamma2"}) {
    EXPECT_NE(job.out.find(std::string(id) + ": clustered"), std::string::npos) << job.out;
  }
  auto pos = job.out.find("jid ");
  ASSERT_NE(pos, std::string::npos);
  std::string jid = job.out.substr(pos + 4, 20);
  for (auto& master : masters_) {
    auto lookup = master->Cli("halite-run", {"--out", "txt", "jobs.lookup_jid", jid});
    ASSERT_EQ(lookup.exit_code, 0) << lookup.err;
    EXPECT_EQ(lookup.out, "alpha: clustered\ngamma: clustered\ngamma2: clustered\n")
        << "on master " << master->ip();
  }
  // Every link of master 1 comes up. Masters started together may first refuse each other
  // until each has read the others' CURVE keys (polled every 2 s), so this is eventual: the
  // job above did not need this link, it went through master 2.
  CommandResult status;
  EXPECT_TRUE(WaitFor([&] {
    status = masters_[0]->Cli("halite-run", {"--out", "json", "cluster.status"});
    return status.exit_code == 0 && status.out.find("\"connected\": false") == std::string::npos;
  })) << status.out
      << status.err;
  std::size_t links = 0;
  for (auto at = status.out.find("\"endpoint\""); at != std::string::npos;
       at = status.out.find("\"endpoint\"", at + 1)) {
    ++links;
  }
  EXPECT_EQ(links, 2u) << status.out;
  EXPECT_NE(status.out.find("\"publishes\": {"), std::string::npos) << status.out;
}

// `halite-run cluster.status` of `master`: its link to peer `id` (null when absent or when the
// command fails).
nlohmann::json LinkTo(MasterUnderTest& master, const std::string& id) {
  auto r = master.Cli("halite-run", {"--out", "json", "cluster.status"});
  if (r.exit_code != 0) return nullptr;
  auto status = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (!status.is_object() || !status.contains("peers") || !status["peers"].is_array()) {
    return nullptr;
  }
  for (const auto& link : status["peers"]) {
    if (link.is_object() && link.value("id", "") == id) return link;
  }
  return nullptr;
}

TEST_F(ClusterTest, RestartedMasterRejoinsAndCatchesUp) {
  MakeCluster(3);
  AddMinion("alpha", 0);
  AddMinion("gamma", 2);
  WaitUntilAllAnswer(*masters_[0]);

  ASSERT_EQ(masters_[2]->Stop(SIGTERM), 0);
  // While master 3 is away, master 1 keeps publishing and its events queue for master 3.
  auto job = masters_[0]->Cli("halite", {"--out", "txt", "alpha", "test.echo", "while-away"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  nlohmann::json away;
  std::uint64_t backlog = 0;
  ASSERT_TRUE(WaitFor([&] {
    away = LinkTo(*masters_[0], ips_[2]);
    nlohmann::json live = LinkTo(*masters_[0], ips_[1]);
    if (!away.is_object() || !live.is_object()) return false;
    backlog = away.value("backlog", std::uint64_t{0});
    return !away.value("connected", true) && backlog >= 1 &&
           live.value("backlog", std::uint64_t{1}) == 0;  // the live peer is drained
  })) << "no backlog queued for the stopped master: "
      << away.dump();
  masters_[2]->Start();
  // Master 1's backlog for master 3 drains once it is back: master 3 acknowledged every
  // queued message (acks are cumulative over consecutive seqs) and none was dropped.
  nlohmann::json back;
  EXPECT_TRUE(WaitFor(
      [&] {
        back = LinkTo(*masters_[0], ips_[2]);
        return back.is_object() && back.value("connected", false) &&
               back.value("backlog", std::uint64_t{1}) == 0;
      },
      60s, 250ms))
      << back.dump();
  EXPECT_EQ(back.value("dropped", std::uint64_t{1}), 0u) << back.dump();
  // ...and master 3, fresh since its restart, counts at least the backlog as received.
  nlohmann::json got = LinkTo(*masters_[2], ips_[0]);
  ASSERT_TRUE(got.is_object());
  EXPECT_GE(got.value("received", std::uint64_t{0}), backlog) << got.dump();
  // Its minion reconnects without help and answers jobs from any master again.
  WaitUntilAllAnswer(*masters_[1]);
}

// Issue 16, deliver 5: a CLI whose own master is killed in the middle of a job carries on
// from the job cache (the CLI opens the master's backend itself) and prints every return the
// other masters stored, instead of naming every minion "did not return".
TEST_F(ClusterTest, ACliWhoseMasterIsKilledMidJobPrintsEveryReturnTheClusterStored) {
  MakeCluster(2);
  AddMinion("north", 1);
  AddMinion("south", 1);
  WaitUntilAllAnswer(*masters_[0]);
  const std::filesystem::path marks = tmp_.path() / "marks";
  std::filesystem::create_directories(marks);
  // Each minion leaves a mark as it starts the job, then answers 4 s later.
  auto cli = std::async(std::launch::async, [&] {
    return masters_[0]->Cli("halite",
                            {"-t", "40", "--out", "txt", "*", "cmd.run",
                             "mktemp -p " + marks.string() +
                                 " >/dev/null; sleep 4; "
                                 "echo finished"},
                            120s);
  });
  auto started = [&] {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(marks)) ++n;
    return n;
  };
  ASSERT_TRUE(WaitFor([&] { return started() == 2; })) << "the job never reached the minions";
  masters_[0]->Kill();  // the CLI's master, while both minions (on master 2) still run the job
  CommandResult r = cli.get();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("north: finished\n"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("south: finished\n"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  EXPECT_NE(r.err.find("from the job cache"), std::string::npos) << r.err;
}

// Issue 16, deliver 4: a job that no peer could forward (the masters cannot reach each
// other: here each one's peer list names an address nobody listens on, as after a cut of the
// masters' own network) still reaches the other master's minions: that master finds it in
// the shared job cache and publishes it; the CLI gets the return from the job cache.
TEST_F(ClusterTest, AJobNoPeerCouldForwardReachesTheOtherMastersMinionsThroughTheJobCache) {
  MakeCluster(2, /*start=*/true, /*auto_accept=*/true, /*unreachable_peers=*/true);
  AddMinion("far", 1);
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(*masters_[1], "*", {"test.ping"}, 1, &last)) << last;
  auto job = masters_[0]->Cli("halite", {"-t", "30", "--out", "txt", "far", "test.echo", "cut"});
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(job.out, "far: cut\n") << job.err;
  auto status = masters_[1]->Cli("halite-run", {"--out", "json", "cluster.status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto parsed = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_TRUE(parsed.is_object()) << status.out;
  EXPECT_GE(parsed.value("storage_publishes", 0), 1) << status.out;
  EXPECT_EQ(parsed.value("forwarded_publishes", 1), 0) << status.out;
}

// Finding 24 (issue 12): a job a minion started itself (its scheduler, salt-call) is stored
// from its `_return`, with the minion's own load: its fun and arguments. Each master's scan
// for jobs no peer forwarded took it for a published job and published it, signed with the
// cluster's key, whenever its returns were not all stored: always with `job_cache: False`.
// A minion could so have every master publish a load of its making (and every stock
// minion's scheduled job ran again, once per master). Now such a job is never published.
// Two minions start jobs of their own, one through each master; then master 1 publishes a
// real job that only master 2's scan can deliver (no peer link comes up). That job's jid
// is the newest, so the scan that publishes it has passed the other two: master 2 must
// have published exactly one job from the job cache. (Master 1's count is not checked: it
// also publishes master 2's test.pings of the set-up, as many as that took.)
TEST_F(ClusterTest, AJobAMinionStartedItselfIsNeverPublishedByAMaster) {
  extra_yaml_[0] = extra_yaml_[1] = "job_cache: False\n";
  MakeCluster(2, /*start=*/true, /*auto_accept=*/true, /*unreachable_peers=*/true);
  AddMinion("far", 1);
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(*masters_[1], "*", {"test.ping"}, 1, &last)) << last;
  auto publishes = [&](int i) {
    auto status = masters_[i]->Cli("halite-run", {"--out", "json", "cluster.status"});
    auto parsed = nlohmann::json::parse(status.out, nullptr, false);
    return parsed.is_object() ? parsed.value("storage_publishes", -1) : -1;
  };
  ASSERT_EQ(publishes(1), 0);  // master 1 has published nothing yet
  const auto now = std::chrono::system_clock::now();
  for (int i = 0; i < 2; ++i) {
    RawMinion evil("evil" + std::to_string(i), NewKey(), "tcp://" + ips_[i] + ":4506");
    auto auth = evil.Auth(ctx_, std::nullopt);
    ASSERT_TRUE(auth.ok() && auth->session) << (auth.ok() ? "no session" : auth.error().ToString());
    const std::string own = jobs::GenerateJid(now - std::chrono::seconds(10 - i));
    auto r = evil.Request(ctx_, *auth->session,
                          wire::Value::MapOf({{"cmd", "_return"},
                                              {"jid", own},
                                              {"fun", "cmd.run"},
                                              {"arg", wire::Value(wire::Array{"touch /tmp/owned"})},
                                              {"return", ""},
                                              {"retcode", 0},
                                              {"success", true}}));
    ASSERT_TRUE(r.ok()) << r.error().ToString();
  }
  auto job = masters_[0]->Cli("halite", {"--async", "far", "test.ping"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  ASSERT_TRUE(WaitFor([&] { return publishes(1) >= 1; }, 30s, 250ms))
      << "master 2 never published the real job from the job cache";
  EXPECT_EQ(publishes(1), 1) << "master 2 published a job a minion started itself";
}

// A minion's returns are fired as events and every event goes to every peer. While a peer is
// down they wait for it, and they carry whole returns: by count alone (100,000) a minion
// could make a master hold gigabytes for a peer that is away. The backlog is bounded in
// bytes too (cluster_event_backlog_bytes); the oldest go first and are counted.
TEST_F(ClusterTest, EventsWaitingForADownPeerAreBoundedInBytes) {
  constexpr std::int64_t kBudget = 8 << 20;
  extra_yaml_[0] = "cluster_event_backlog_bytes: " + std::to_string(kBudget) + "\n";
  health_port_ = 4510;
  MakeCluster(2, /*start=*/true, /*auto_accept=*/true, /*unreachable_peers=*/true);
  RawMinion big("big", NewKey(), "tcp://" + ips_[0] + ":4506");
  auto auth = big.Auth(ctx_, std::nullopt);
  ASSERT_TRUE(auth.ok() && auth->session) << (auth.ok() ? "no session" : auth.error().ToString());
  constexpr int kReturns = 12;  // 2 MiB each: three times the budget
  for (int i = 0; i < kReturns; ++i) {
    auto r = big.Request(ctx_, *auth->session,
                         wire::Value::MapOf({{"cmd", "_return"},
                                             {"jid", "nocache"},
                                             {"fun", "test.echo"},
                                             {"return", std::string(2 << 20, 'a' + i)},
                                             {"retcode", 0},
                                             {"success", true}}));
    ASSERT_TRUE(r.ok()) << r.error().ToString();
  }
  nlohmann::json events;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto status = masters_[0]->Cli("halite-run", {"--out", "json", "cluster.status"});
        auto parsed = nlohmann::json::parse(status.out, nullptr, false);
        if (!parsed.is_object() || !parsed.contains("peers") || parsed["peers"].empty()) {
          return false;
        }
        events = parsed["peers"][0].value("events", nlohmann::json());
        return events.is_object() && events.value("dropped", 0) >= kReturns - 4;
      },
      30s, 250ms))
      << "the backlog for the down peer never dropped its oldest events: " << events.dump();
  EXPECT_LE(events.value("queued_bytes", std::int64_t{-1}), kBudget) << events.dump();
  EXPECT_GE(events.value("queued_bytes", std::int64_t{0}), std::int64_t{2} << 20) << events.dump();
  auto metric = Metric(ips_[0], 4510, "halite_peer_queued_bytes{");
  ASSERT_TRUE(metric.has_value());
  EXPECT_LE(*metric, static_cast<double>(kBudget));
}

// Issue 16, deliver 4: the masters' own network is cut so that master 3 reaches neither peer
// while its minion, the shared storage and the other two masters (which still reach each
// other) stay reachable. Here master 3 runs its peer channel on another port, so no link to
// or from it comes up while every id stays the real one, as behind a failed switch. Master 3
// reports the partition on /health (503: HAProxy moves its minions to the majority), masters
// 1 and 2 keep serving, cluster.status shows the sides, and a job published on master 1
// still reaches master 3's minion through the job cache. Healed (master 3 back on the
// cluster's port), master 3 serves again.
TEST_F(ClusterTest, AMasterCutFromBothPeersReportsThePartitionAndTheMajorityServes) {
  health_port_ = 4510;
  extra_yaml_[2] = "cluster_pool_port: 4530\n";
  MakeCluster(3);
  AddMinion("island", 2);
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(*masters_[2], "*", {"test.ping"}, 1, &last)) << last;
  HttpResponse cut = WaitForHealth(2, 503, "partitioned");
  ASSERT_EQ(cut.status, 503) << cut.body;
  EXPECT_NE(cut.body.find("partitioned: this master's side (" + ips_[2] + ") is cut off"),
            std::string::npos)
      << cut.body;
  std::vector<std::string> majority{ips_[0], ips_[1]};
  std::sort(majority.begin(), majority.end());
  for (int i : {0, 1}) {
    auto h = HealthOf(i);
    EXPECT_EQ(h.status, 200) << ips_[i] << ": " << h.body;
    auto body = nlohmann::json::parse(h.body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << h.body;
    EXPECT_EQ(body["quorum"].value("serving", false), true) << h.body;
    EXPECT_EQ(body["quorum"]["serving_side"], nlohmann::json(majority)) << h.body;
  }
  auto status = masters_[2]->Cli("halite-run", {"--out", "json", "cluster.status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto parsed = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_TRUE(parsed.is_object()) << status.out;
  EXPECT_EQ(parsed["quorum"].value("serving", true), false) << status.out;
  EXPECT_EQ(parsed["quorum"]["side"], nlohmann::json({ips_[2]})) << status.out;
  EXPECT_EQ(parsed["quorum"]["serving_side"], nlohmann::json(majority)) << status.out;
  // The job reaches the cut-off master's minion anyway, once.
  auto job = masters_[0]->Cli("halite", {"-t", "30", "--out", "txt", "island", "test.echo", "x"});
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(job.out, "island: x\n") << job.err;
  // Healed: master 3 on the cluster's port again; every master serves.
  masters_[2]->Stop();
  specs_[2].extra_yaml.clear();
  masters_[2] = std::make_unique<MasterUnderTest>(tmp_.path(), specs_[2]);
  masters_[2]->Start();
  HttpResponse healed = WaitForHealth(2, 200);
  EXPECT_EQ(healed.status, 200) << healed.body;
}

// The two-master case (docs/failure-modes.md): cut apart with both alive, the lower id keeps
// serving and the other reports the partition; when the lower id then dies, the other takes
// over (a dead master is no side).
TEST_F(ClusterTest, TwoMastersCutApartTheLowerIdServesAndTheOtherTakesOverWhenItDies) {
  health_port_ = 4510;
  extra_yaml_[1] = "cluster_pool_port: 4530\n";  // no link either way, real ids
  MakeCluster(2);
  const int lo = ips_[0] < ips_[1] ? 0 : 1;
  const int hi = 1 - lo;
  HttpResponse h = WaitForHealth(hi, 503, "partitioned");
  ASSERT_EQ(h.status, 503) << h.body;
  EXPECT_NE(h.body.find("cut off from (" + ips_[lo] + "), which serves"), std::string::npos)
      << h.body;
  EXPECT_EQ(HealthOf(lo).status, 200);
  masters_[lo]->Kill();
  h = WaitForHealth(hi, 200);
  EXPECT_EQ(h.status, 200) << h.body;
}

// With two connected masters, killing the lower id never takes the survivor out of HAProxy
// too: its counter stops being counted (stale) before the survivor's grace could run out.
TEST_F(ClusterTest, KillingTheLowerIdOfTwoNeverTakesTheSurvivorOut) {
  health_port_ = 4510;
  MakeCluster(2);
  const int lo = ips_[0] < ips_[1] ? 0 : 1;
  const int hi = 1 - lo;
  HttpResponse h;
  ASSERT_TRUE(WaitFor(
      [&] {
        h = HealthOf(hi);
        auto body = nlohmann::json::parse(h.body, nullptr, false);
        return h.status == 200 && body.is_object() && body.contains("quorum") &&
               body["quorum"]["side"].size() == 2;
      },
      60s, 250ms))
      << h.status << " " << h.body;
  masters_[lo]->Kill();
  // Every /health answer over the next 12 s (past stale and grace together) is 200.
  const auto end = std::chrono::steady_clock::now() + 12s;
  int answers = 0;
  while (std::chrono::steady_clock::now() < end) {
    h = HealthOf(hi);
    ASSERT_EQ(h.status, 200) << "answer " << answers << " after the kill: " << h.body;
    ++answers;
    std::this_thread::sleep_for(200ms);  // polling an invariant, not waiting for an event
  }
  EXPECT_GE(answers, 20);
}

TEST_P(SharedFolderClusterTest, MastersStartedAtTheSameInstantShareOneClusterKeyAndOneAesKey) {
  MakeCluster(3);  // StartAsync on all three, then wait: they race on the empty shared dir
  std::optional<std::string> pub_key;
  std::optional<std::string> aes;
  auto minion_key = *wire::RsaPrivateKey::Generate(2048);
  for (auto& master : masters_) {
    RawMinion raw("racer", minion_key, "tcp://" + master->ip() + ":4506");
    auto auth = raw.Auth(ctx_, std::nullopt);
    ASSERT_TRUE(auth.ok()) << auth.error().ToString();
    ASSERT_TRUE(auth->aes.has_value()) << auth->inner.ToJson();
    std::string this_pub = *auth->inner.FindStr("pub_key");
    if (!pub_key) pub_key = this_pub;
    if (!aes) aes = auth->aes->key_string();
    EXPECT_EQ(this_pub, *pub_key) << "master " << master->ip() << " shows another cluster key";
    EXPECT_EQ(auth->aes->key_string(), *aes) << "master " << master->ip() << " uses another AES";
  }
  auto cluster_pub = keys::ReadFile(shared_ / "pki" / "cluster.pub");
  ASSERT_TRUE(cluster_pub.ok());
  EXPECT_EQ(*pub_key, wire::CleanKey(*cluster_pub));
}

TEST_P(SharedFolderClusterTest, ADropFileRotatesTheSharedAesKeyOnEveryMasterPastAStaleLock) {
  MakeCluster(3);
  auto minion_key = *wire::RsaPrivateKey::Generate(2048);
  auto aes_on = [&](MasterUnderTest& master) {
    return AesKeyOf(ctx_, "rotor", minion_key, "tcp://" + master.ip() + ":4506");
  };
  const auto before = aes_on(*masters_[0]);
  ASSERT_TRUE(before.has_value());
  // A rotation lock left by a master that died mid-rotation (older than a minute)...
  const auto lock = shared_ / "pki" / ".aes.rotate";
  WriteFile(lock, ips_[2]);
  const auto old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  std::filesystem::last_write_time(lock, old);
  // ...does not stop the rotation master 2 is asked for (the drop file names it).
  const auto dfn = shared_ / "cache" / ".dfn";
  WriteFile(dfn, ips_[1]);
  std::filesystem::permissions(dfn, std::filesystem::perms::owner_read);
  std::optional<std::string> after;
  ASSERT_TRUE(WaitFor([&] {
    after = aes_on(*masters_[1]);
    return after && *after != *before;
  })) << "master 2 never rotated the key";
  // Every master serves the new key: announced over the peer links or read from the file.
  for (auto& master : masters_) {
    std::optional<std::string> key;
    EXPECT_TRUE(WaitFor([&] {
      key = aes_on(*master);
      return key == after;
    })) << "master "
        << master->ip() << " kept another AES key";
  }
  EXPECT_FALSE(std::filesystem::exists(lock)) << "the stale lock outlived the rotation";
  EXPECT_FALSE(std::filesystem::exists(dfn));
}

TEST_P(SharedFolderClusterTest, AKeyAcceptedOnOneMasterIsAcceptedOnEvery) {
  MakeCluster(3, /*start=*/true, /*auto_accept=*/false);
  AddMinion("alpha", 0);
  // The minion signed in to master 1; its pending key is in the shared folder, so master 3
  // lists it too.
  CommandResult pending;
  ASSERT_TRUE(WaitFor([&] {
    pending = masters_[2]->Cli("halite-key", {"-l", "un"});
    return pending.out.find("alpha") != std::string::npos;
  })) << pending.out
      << pending.err;
  auto accept = masters_[1]->Cli("halite-key", {"-a", "alpha", "--yes"});
  ASSERT_EQ(accept.exit_code, 0) << accept.out << accept.err;
  for (auto& master : masters_) {
    auto listed = master->Cli("halite-key", {"-L"});
    EXPECT_EQ(listed.out, "Accepted Keys:\nalpha\nDenied Keys:\nUnaccepted Keys:\nRejected Keys:\n")
        << "on master " << master->ip();
  }
  // The minion, still waiting on master 1, is let in and answers a job from master 3.
  WaitUntilAllAnswer(*masters_[2]);
}

TEST_F(ClusterTest, UnauthenticatedPoolClientsChangeNothing) {
  MakeCluster(2);
  AddMinion("alpha", 0);
  WaitUntilAllAnswer(*masters_[1]);
  // A stranger on the pool port, plain and with a CURVE key of its own, sends what a peer
  // would send to make master 1 publish a job.
  const std::string forged_jid = "20200101000000000001";
  std::string publish = wire::Pack(
      wire::Value::MapOf(
          {{"seq", 1},
           {"epoch", 7},
           {"low", 1},
           {"kind", "publish"},
           {"payload",
            wire::Value::Bin(wire::Pack(
                wire::Value::MapOf(
                    {{"ts", static_cast<long long>(std::time(nullptr))},  // NOLINT
                     {"load", wire::Value::MapOf({{"fun", "test.echo"},
                                                  {"arg", wire::Value(wire::Array{"pwned"})},
                                                  {"tgt", "*"},
                                                  {"jid", forged_jid},
                                                  {"ret", ""},
                                                  {"tgt_type", "glob"},
                                                  {"user", "root"}})}}),
                wire::Packing::kBinType))}}),
      wire::Packing::kBinType);
  for (bool curve : {false, true}) {
    zmq::socket_t dealer(ctx_, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    if (curve) {
      char pub[41], sec[41];
      ASSERT_EQ(zmq_curve_keypair(pub, sec), 0);
      auto server = keys::ReadFile(shared_ / "pki" / "peers" / (ips_[0] + ".curve"));
      ASSERT_TRUE(server.ok());
      std::string server_key = server->substr(0, 40);
      dealer.set(zmq::sockopt::curve_serverkey, server_key);
      dealer.set(zmq::sockopt::curve_publickey, std::string(pub));
      dealer.set(zmq::sockopt::curve_secretkey, std::string(sec));
    }
    dealer.connect("tcp://" + ips_[0] + ":4520");
    dealer.send(zmq::buffer(publish), zmq::send_flags::dontwait);
    zmq::pollitem_t item{static_cast<void*>(dealer), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, 1000ms);
    EXPECT_FALSE(item.revents & ZMQ_POLLIN) << "a stranger got an answer from the pool port";
  }
  // A real job through master 1 afterwards: its return proves the minion has handled
  // whatever was published before it.
  auto real = masters_[0]->Cli("halite", {"--out", "txt", "alpha", "test.echo", "genuine"});
  ASSERT_EQ(real.exit_code, 0) << real.out << real.err;
  EXPECT_NE(real.out.find("alpha: genuine"), std::string::npos);
  for (auto& master : masters_) {
    auto lookup = master->Cli("halite-run", {"--out", "txt", "jobs.lookup_jid", forged_jid});
    EXPECT_EQ(lookup.out.find("pwned"), std::string::npos) << lookup.out;
  }
}

TEST_F(ClusterTest, IdentityProblemsStopStartUpWithAMessage) {
  MakeCluster(2, /*start=*/false);
  // A name instead of an address as id.
  std::string bad = ReadFileOrEmpty(masters_[0]->config());
  bad.replace(bad.find("id: " + ips_[0]), 4 + ips_[0].size(), "id: master-one");
  WriteFile(tmp_.path() / "bad.conf", bad);
  auto r = halite::testing::Run(
      {BinaryPath("halite-master").string(), "-c", (tmp_.path() / "bad.conf").string()}, 30s);
  EXPECT_EQ(r.exit_code, 1) << r.err;  // "cannot start", not a crash or a signal
  EXPECT_NE(r.err.find("must be this master's IP address"), std::string::npos) << r.err;
  // A peers/<id>.pub that belongs to another master.
  masters_[0]->Start();
  masters_[0]->Stop();
  std::filesystem::remove_all(masters_[0]->dir() / "pki");  // "rebuilt" master: new key
  auto again = masters_[0]->Cli("halite-master", {});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_NE(again.err.find("holds another master's key"), std::string::npos) << again.err;
}

// Three masters on a GlusterFS volume with TLS, a minion on each; the volume loses a brick.
class GlusterFsClusterTest : public ClusterTest {
 protected:
  void SetUp() override {
    auto volume = GlusterVolume::Create(UniqueLoopbackIp());
    ASSERT_TRUE(volume.ok()) << volume.error().ToString();
    gluster_ = std::move(*volume);
    shared_ = gluster_->mount() / "shared";
    health_port_ = 4510;
  }

  std::string Health(MasterUnderTest& master) {
    return halite::testing::Run({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                 "--max-time", "10", "http://" + master.ip() + ":4510/health"})
        .out;
  }
};

TEST_F(GlusterFsClusterTest, ABrickKilledMidJobChangesNothingAUserSeesAndHealsWhenBack) {
  MakeCluster(3);
  AddMinion("alpha", 0);
  AddMinion("beta", 1);
  AddMinion("gamma", 2);
  WaitUntilAllAnswer(*masters_[0]);
  const std::string keys =
      "Accepted Keys:\nalpha\nbeta\ngamma\nDenied Keys:\nUnaccepted Keys:\n"
      "Rejected Keys:\n";
  for (auto& master : masters_) {
    ASSERT_EQ(master->Cli("halite-key", {"-L"}).out, keys) << "on master " << master->ip();
    ASSERT_EQ(Health(*master), "200") << "on master " << master->ip();
  }
  // The job holds every minion until the gate (outside the volume) opens, so the brick dies
  // while all three run and their returns are written with one brick gone.
  const auto started = tmp_.path() / "started";
  const auto gate = tmp_.path() / "gate";
  std::filesystem::create_directories(started);
  const std::string script = "mktemp " + started.string() +
                             "/job.XXXXXX >/dev/null; while [ ! -e " + gate.string() +
                             " ]; do sleep 0.05; done; echo done";
  auto cli = std::async(std::launch::async, [&] {
    return masters_[1]->Cli("halite", {"-v", "-t", "120", "--out", "txt", "*", "cmd.run", script},
                            240s);
  });
  auto count_started = [&] {
    return std::distance(std::filesystem::directory_iterator(started),
                         std::filesystem::directory_iterator());
  };
  ASSERT_TRUE(WaitFor([&] { return count_started() == 3; }, 60s))
      << count_started() << " of 3 jobs started";
  const pid_t brick = gluster_->BrickPid(1);
  ASSERT_GT(brick, 0);
  ASSERT_TRUE(gluster_->KillBrick(1).ok());
  ASSERT_EQ(gluster_->BrickPid(1), -1) << "brick 1 still runs";
  ASSERT_EQ(cli.wait_for(0s), std::future_status::timeout) << "the job ended before the kill";
  for (auto& master : masters_) EXPECT_EQ(Health(*master), "200") << "on master " << master->ip();
  WriteFile(gate, "");
  auto job = cli.get();
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(job.out.find("did not return"), std::string::npos) << job.out;
  auto pos = job.out.find("jid ");
  ASSERT_NE(pos, std::string::npos) << job.out;
  const std::string jid = job.out.substr(pos + 4, 20);
  for (const char* id : {"alpha", "beta", "gamma"}) {
    EXPECT_NE(job.out.find(std::string(id) + ": done\n"), std::string::npos) << job.out;
  }
  // Durable in the shared job cache, read by every master; keys and health as before.
  for (auto& master : masters_) {
    auto lookup = master->Cli("halite-run", {"--out", "txt", "jobs.lookup_jid", jid});
    EXPECT_EQ(lookup.out, "alpha: done\nbeta: done\ngamma: done\n") << "on master " << master->ip();
    EXPECT_EQ(master->Cli("halite-key", {"-L"}).out, keys) << "on master " << master->ip();
    EXPECT_EQ(Health(*master), "200") << "on master " << master->ip();
  }
  ASSERT_EQ(gluster_->BrickPid(1), -1) << "the brick came back by itself; nothing was tested";
  // The brick comes back and the self-heal daemon copies what it missed (the returns above).
  ASSERT_TRUE(gluster_->RestartBricks().ok());
  std::string why;
  EXPECT_TRUE(WaitFor([&] { return gluster_->Healed(&why); }, 120s, 500ms)) << why;
  EXPECT_NE(why.find(" files on every brick"), std::string::npos) << why;
  WaitUntilAllAnswer(*masters_[2]);
}

// A client needs a certificate our CA signed on both paths: management (the volfile fetch
// from glusterd) and I/O (the bricks). The rogue certificate has our CN, so only the CA check
// can refuse it. First a client with the right certificates mounts and reads: the refusals
// below are not a broken mount procedure.
TEST_F(GlusterFsClusterTest, OnlyAClientWithACertificateOurCaSignedMountsTheVolume) {
  WriteFile(gluster_->mount() / "probe", "through TLS\n");
  const auto tls = gluster_->tls_dir();
  const auto cert = tls / "node.pem", key = tls / "node.key";
  const auto rogue = tls / "rogue.pem", rogue_key = tls / "rogue.key";
  auto trusted = gluster_->MountAsClient(cert, key, cert, key, "probe");
  ASSERT_TRUE(trusted.ok()) << trusted.error().ToString();
  EXPECT_EQ(*trusted, "through TLS\n");
  auto no_mgmt = gluster_->MountAsClient(rogue, rogue_key, cert, key, "probe");
  EXPECT_FALSE(no_mgmt.ok()) << "glusterd served the volume to a rogue: " << *no_mgmt;
  auto no_io = gluster_->MountAsClient(cert, key, rogue, rogue_key, "probe");
  EXPECT_FALSE(no_io.ok()) << "the volume served a rogue I/O client: " << *no_io;
  // The same on the bricks alone (glusterd also checks the I/O certificate when the client
  // asks it for the bricks' ports): a client that goes straight to the bricks' ports.
  auto direct = gluster_->ReadFromBricksAsClient(cert, key, "probe");
  ASSERT_TRUE(direct.ok()) << direct.error().ToString();
  EXPECT_EQ(*direct, "through TLS\n");
  auto rogue_direct = gluster_->ReadFromBricksAsClient(rogue, rogue_key, "probe");
  EXPECT_FALSE(rogue_direct.ok()) << "the bricks served a rogue: " << *rogue_direct;
}

INSTANTIATE_TEST_SUITE_P(On, SharedFolderClusterTest,
                         ::testing::Values(SharedFolder::kLocal, SharedFolder::kGlusterFs),
                         SharedFolderName);

}  // namespace
}  // namespace halite::testing
