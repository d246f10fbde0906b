// halite-swarm's command line and what it makes of each simulated minion (src/swarm).
#include "halite/swarm/swarm_options.h"

#include <gtest/gtest.h>

namespace halite::swarm {
namespace {

using namespace std::chrono_literals;

Result<SwarmCommand> Parse(std::vector<std::string> args) { return ParseSwarmArgs(args); }

std::string ErrorOf(std::vector<std::string> args) {
  auto parsed = Parse(std::move(args));
  if (parsed.ok()) return "<parsed>";
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  return parsed.error().message;
}

TEST(SwarmOptionsTest, DefaultsNeedOnlyAMaster) {
  auto parsed = Parse({"--master", "127.0.0.9"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
  EXPECT_EQ(parsed->action, SwarmCommand::Action::kRun);
  const SwarmOptions& o = parsed->options;
  EXPECT_EQ(o.master_ip, "127.0.0.9");
  EXPECT_EQ(o.port, 4506);
  EXPECT_EQ(o.count, 100);
  EXPECT_EQ(o.prefix, "swarm-");
  EXPECT_EQ(o.protocol, 3);
  EXPECT_EQ(o.idle_close_ms, -1);
  EXPECT_FALSE(o.forget_master_key);
}

TEST(SwarmOptionsTest, EveryValueOptionIsRead) {
  auto parsed = Parse({"--master",
                       "10.1.2.3",
                       "--port",
                       "5506",
                       "--pub-port",
                       "5505",
                       "--count",
                       "7",
                       "--prefix",
                       "x-",
                       "--start-index",
                       "40",
                       "--ramp",
                       "0",
                       "--keys-dir",
                       "/k",
                       "--keysize",
                       "1024",
                       "--grains",
                       "role=web",
                       "--grains-cycle",
                       "dc=a,b,c",
                       "--latency-ms",
                       "15",
                       "--protocol",
                       "2",
                       "--duration",
                       "2.5",
                       "--status-interval",
                       "1",
                       "--loops",
                       "3",
                       "--workers",
                       "4",
                       "--exec-workers",
                       "5",
                       "--io-threads",
                       "2",
                       "--job-timeout",
                       "9",
                       "--acceptance-wait",
                       "3",
                       "--auth-timeout",
                       "6",
                       "--return-timeout",
                       "8",
                       "--random-reauth-delay",
                       "11",
                       "--idle-close-ms",
                       "250",
                       "--log-level",
                       "debug",
                       "--log-file",
                       "/tmp/s.log",
                       "--forget-master-key"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
  const SwarmOptions& o = parsed->options;
  EXPECT_EQ(o.master_ip, "10.1.2.3");
  EXPECT_EQ(o.port, 5506);
  EXPECT_EQ(o.pub_port, 5505);
  EXPECT_EQ(o.count, 7);
  EXPECT_EQ(o.prefix, "x-");
  EXPECT_EQ(o.start_index, 40);
  EXPECT_EQ(o.ramp, 0);
  EXPECT_EQ(o.keys_dir, "/k");
  EXPECT_EQ(o.keysize, 1024);
  ASSERT_EQ(o.grains.size(), 1u);
  EXPECT_EQ(o.grains[0], (std::pair<std::string, std::string>{"role", "web"}));
  ASSERT_EQ(o.grains_cycle.size(), 1u);
  EXPECT_EQ(o.grains_cycle[0].first, "dc");
  EXPECT_EQ(o.grains_cycle[0].second, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(o.latency_ms, 15);
  EXPECT_EQ(o.protocol, 2);
  EXPECT_EQ(o.duration, 2.5);
  EXPECT_EQ(o.status_interval, 1);
  EXPECT_EQ(o.loops, 3);
  EXPECT_EQ(o.workers, 4);
  EXPECT_EQ(o.exec_workers, 5);
  EXPECT_EQ(o.io_threads, 2);
  EXPECT_EQ(o.job_timeout, 9);
  EXPECT_EQ(o.acceptance_wait, 3);
  EXPECT_EQ(o.auth_timeout, 6);
  EXPECT_EQ(o.return_timeout, 8);
  EXPECT_EQ(o.random_reauth_delay, 11);
  EXPECT_EQ(o.idle_close_ms, 250);
  EXPECT_EQ(o.log_level, "debug");
  EXPECT_EQ(o.log_file, "/tmp/s.log");
  EXPECT_TRUE(o.forget_master_key);
}

TEST(SwarmOptionsTest, HelpAndVersionAreActionsNotErrors) {
  auto help = Parse({"--count", "3", "--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(help->action, SwarmCommand::Action::kHelp);
  auto version = Parse({"-V"});
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(version->action, SwarmCommand::Action::kVersion);
  EXPECT_NE(SwarmUsage().find("--grains-cycle K=A,B"), std::string::npos);
}

TEST(SwarmOptionsTest, BadCommandLinesSayWhatIsWrong) {
  EXPECT_EQ(ErrorOf({"--count", "3"}), "--master is required\n" + SwarmUsage());
  EXPECT_EQ(ErrorOf({"--master", "127.0.0.9", "--count"}),
            "--count: missing value or unknown option");
  EXPECT_EQ(ErrorOf({"--master", "127.0.0.9", "--bogus", "1"}), "unknown option --bogus");
  for (const auto& [option, value] :
       std::vector<std::pair<std::string, std::string>>{{"--count", "0"},
                                                        {"--count", "-1"},
                                                        {"--count", "7x"},
                                                        {"--port", "0"},
                                                        {"--port", "70000"},
                                                        {"--protocol", "1"},
                                                        {"--protocol", "4"},
                                                        {"--keysize", "512"},
                                                        {"--keysize", "20000"},
                                                        {"--loops", "65"},
                                                        {"--loops", "0"},
                                                        {"--ramp", "-1"},
                                                        {"--status-interval", "0"},
                                                        {"--idle-close-ms", "-2"},
                                                        {"--grains", "=v"},
                                                        {"--grains", "novalue"},
                                                        {"--grains-cycle", "k"},
                                                        {"--duration", "soon"}}) {
    EXPECT_EQ(ErrorOf({"--master", "127.0.0.9", option, value}),
              option + ": invalid value '" + value + "'");
  }
}

TEST(SwarmOptionsTest, EachMinionGetsItsIdDirAndItsTurnOfTheCycledGrains) {
  auto parsed = Parse({"--master", "127.0.0.9", "--prefix", "web", "--start-index", "10",
                       "--keys-dir", "/keys", "--grains-cycle", "dc=east,west", "--grains-cycle",
                       "rack=1,2,3", "--return-timeout", "1.5", "--protocol", "2"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
  const SwarmOptions& o = parsed->options;
  const minion::MinionOptions common = CommonMinionOptions(o, 250);
  EXPECT_EQ(common.master_ip, "127.0.0.9");
  EXPECT_EQ(common.request_protocol_version, 2);
  EXPECT_EQ(common.return_retry_timer, 1500ms);
  EXPECT_EQ(common.return_retry_timer_max, 3000ms);
  EXPECT_EQ(common.request_idle_close, 250ms);

  std::vector<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    minion::MinionOptions m = MinionOptionsFor(o, common, i);
    EXPECT_EQ(m.master_ip, "127.0.0.9");
    EXPECT_EQ(m.pki_dir, std::filesystem::path("/keys") / m.id);
    EXPECT_EQ(m.cachedir, m.pki_dir);
    seen.push_back(m.id + " " + m.grains.ToJson());
  }
  EXPECT_EQ(seen,
            (std::vector<std::string>{
                R"(web10 {"dc": "east", "rack": "1"})", R"(web11 {"dc": "west", "rack": "2"})",
                R"(web12 {"dc": "east", "rack": "3"})", R"(web13 {"dc": "west", "rack": "1"})"}));
}

TEST(SwarmOptionsTest, IdleRequestSocketsCloseOnlyWhenFileDescriptorsAreShort) {
  SwarmOptions o;
  o.count = 1000;
  EXPECT_EQ(WantedFileLimit(1000), 7024u);
  EXPECT_EQ(MinimumFileLimit(1000), 4512u);
  EXPECT_EQ(EffectiveIdleCloseMs(o, 4512), 0);     // enough: never close
  EXPECT_EQ(EffectiveIdleCloseMs(o, 4511), 2000);  // short: close after 2 s idle
  o.idle_close_ms = 0;                             // asked for: kept either way
  EXPECT_EQ(EffectiveIdleCloseMs(o, 1024), 0);
  o.idle_close_ms = 300;
  EXPECT_EQ(EffectiveIdleCloseMs(o, 1 << 20), 300);
}

}  // namespace
}  // namespace halite::swarm
