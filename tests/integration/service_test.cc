// halite-master under a service manager: the sd_notify(3) messages a Type=notify unit relies
// on (READY once it serves, WATCHDOG while it runs, RELOADING/READY around SIGHUP, STOPPING)
// read from a NOTIFY_SOCKET the test binds, and what a SIGHUP changes as a minion sees it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <zmq.hpp>

#include "halite/keys/fs.h"
#include "harness.h"
#include "notify_socket.h"
#include "raw_client.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

wire::RsaPrivateKey NewKey() { return *wire::RsaPrivateKey::Generate(2048); }

class ServiceTest : public ::testing::Test {
 protected:
  std::unique_ptr<MasterUnderTest> MakeMaster(MasterSpec spec) {
    spec.env.push_back(notify_.EnvEntry());
    return std::make_unique<MasterUnderTest>(tmp_.path(), std::move(spec));
  }
  wire::RsaPublicKey MasterPub(MasterUnderTest& m) {
    return *wire::RsaPublicKey::FromPem(*keys::ReadFile(m.dir() / "pki" / "master.pub"));
  }
  // Replaces the first match of `pattern` in the master's config file.
  void EditConfig(MasterUnderTest& m, const std::string& pattern, const std::string& with) {
    std::string text = ReadFileOrEmpty(m.config());
    std::string edited = std::regex_replace(text, std::regex(pattern), with,
                                            std::regex_constants::format_first_only);
    ASSERT_NE(edited, text) << "pattern " << pattern << " not in the config";
    WriteFile(m.config(), edited);
  }
  // SIGHUP, then the READY that ends the reload; its STATUS line.
  std::string Reload(MasterUnderTest& m) {
    ::kill(m.pid(), SIGHUP);
    EXPECT_TRUE(notify_.WaitFor("RELOADING", "1", 30s)) << m.Log();
    auto ready = notify_.WaitFor("READY", "1", 30s);
    EXPECT_TRUE(ready) << m.Log();
    return ready ? (*ready)["STATUS"] : std::string();
  }

  TempDir tmp_;
  NotifySocket notify_{tmp_.path() / "notify.sock"};
  zmq::context_t ctx_;
};

TEST_F(ServiceTest, ReadyOnceServingWatchdogWhileRunningStoppingOnTerm) {
  MasterSpec spec;
  spec.shared_dir = tmp_.path() / "shared";
  spec.shared_via_link = true;
  spec.health_port = 4510;
  spec.env = {"WATCHDOG_USEC=900000"};  // 0.9 s: fed every 0.3 s
  auto master = MakeMaster(spec);
  master->StartAsync();
  auto ready = notify_.WaitFor("READY", "1", 60s);
  ASSERT_TRUE(ready) << master->Log();
  EXPECT_THAT((*ready)["STATUS"], HasSubstr("serving on " + master->ip()));
  // READY means serving: a sign-in is answered at once (pending: no auto_accept).
  RawMinion minion("web1", NewKey(), "tcp://" + master->ip() + ":4506");
  auto auth = minion.Auth(ctx_, MasterPub(*master));
  ASSERT_TRUE(auth.ok()) << auth.error().ToString();
  EXPECT_FALSE(auth->aes.has_value());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(notify_.WaitFor("WATCHDOG", "1", 5s)) << "watchdog " << i << "\n" << master->Log();
  }
  // Unhealthy is not hung: with its cache folder gone the master answers 503 on /health and
  // keeps feeding the watchdog (a restart would not bring the folder back).
  master->BreakSharedDir();
  ASSERT_TRUE(WaitFor([&] {
    auto r = halite::testing::Run({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                   "http://" + master->ip() + ":4510/health"},
                                  10s);
    return r.out == "503";
  })) << master->Log();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(notify_.WaitFor("WATCHDOG", "1", 5s)) << "unhealthy watchdog " << i;
  }
  ::kill(master->pid(), SIGTERM);
  EXPECT_TRUE(notify_.WaitFor("STOPPING", "1", 30s)) << master->Log();
  EXPECT_EQ(master->Stop(SIGTERM), 0);
}

TEST_F(ServiceTest, SighupAppliesLiveKeysAndNamesTheOnesThatNeedARestart) {
  MasterSpec spec;
  auto master = MakeMaster(spec);
  const auto a = master->dir() / "pillar";
  const auto b = master->dir() / "pillar-b";
  WriteFile(a / "top.sls", "base:\n  '*':\n    - one\n");
  WriteFile(a / "one.sls", "source: a\n");
  WriteFile(b / "top.sls", "base:\n  '*':\n    - two\n");
  WriteFile(b / "two.sls", "source: b\n");
  master->Start();
  ASSERT_TRUE(notify_.WaitFor("READY", "1", 30s));
  const auto pub = MasterPub(*master);
  const std::string endpoint = "tcp://" + master->ip() + ":4506";
  // Before: keys wait for an operator.
  RawMinion first("first", NewKey(), endpoint);
  auto pending = first.Auth(ctx_, pub);
  ASSERT_TRUE(pending.ok()) << pending.error().ToString();
  EXPECT_FALSE(pending->aes.has_value());

  EditConfig(*master, "auto_accept: false", "auto_accept: true");
  EditConfig(*master, "base: \\[" + a.string() + "\\]", "base: [" + b.string() + "]");
  WriteFile(master->config(), ReadFileOrEmpty(master->config()) + "worker_threads: 3\n");
  std::string status = Reload(*master);
  EXPECT_EQ(status,
            "reloaded; applied: auto_accept, pillar_roots; restart needed for: worker_threads");

  // After: a new key is accepted at once, and its pillar comes from the new roots.
  RawMinion second("second", NewKey(), endpoint);
  auto accepted = second.Auth(ctx_, pub);
  ASSERT_TRUE(accepted.ok()) << accepted.error().ToString();
  ASSERT_TRUE(accepted->session.has_value()) << master->Log();
  auto pillar = second.Pillar(ctx_, *accepted->session, wire::Value::MapOf({{"os", "Debian"}}));
  ASSERT_TRUE(pillar.ok()) << pillar.error().ToString();
  EXPECT_EQ(nlohmann::json::parse(pillar->ToJson()), nlohmann::json::parse(R"({"source": "b"})"));

  // A file that does not load changes nothing, and says so.
  const std::string good = ReadFileOrEmpty(master->config());
  WriteFile(master->config(), good + "publish_port: [\n");
  status = Reload(*master);
  EXPECT_THAT(status, HasSubstr("reload failed: "));
  EXPECT_THAT(status, HasSubstr(master->config().string()));
  RawMinion third("third", NewKey(), endpoint);
  auto still = third.Auth(ctx_, pub);
  ASSERT_TRUE(still.ok());
  EXPECT_TRUE(still->aes.has_value()) << "auto_accept was lost by a failed reload";

  // The key waiting for a restart is named again until the restart.
  WriteFile(master->config(), good);
  EXPECT_EQ(Reload(*master), "reloaded; applied: none; restart needed for: worker_threads");
  EXPECT_TRUE(master->Alive());
}

}  // namespace
}  // namespace halite::testing
