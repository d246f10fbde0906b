// halite, halite-key and halite-run as an operator runs them: argument parsing and the exit
// code of each outcome (src/apps/*_main.cc), against a real master where one is needed.
#include <gtest/gtest.h>

#include <sstream>

#include "halite/version.h"
#include "harness.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

class CliTest : public ::testing::Test {
 protected:
  CliTest() : master_(tmp_.path(), Spec()) {}
  static MasterSpec Spec() {
    MasterSpec spec;
    spec.id = "m1";
    return spec;
  }
  // `tool` with `args` and no -c: for parse errors that must come before any config is read.
  static CommandResult Bare(const std::string& tool, const std::vector<std::string>& args) {
    std::vector<std::string> argv{BinaryPath(tool).string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return halite::testing::Run(argv, 30s);
  }

  TempDir tmp_;
  MasterUnderTest master_;  // started by the tests that need it
};

TEST_F(CliTest, UsageErrorsExit64AndVersionAndHelpExit0) {
  const std::string version = std::string(kVersion);
  for (const std::string tool : {"halite", "halite-key", "halite-run"}) {
    SCOPED_TRACE(tool);
    auto v = Bare(tool, {"--version"});
    EXPECT_EQ(v.exit_code, 0) << v.err;
    EXPECT_EQ(v.out, tool + " " + version + "\n");
    auto h = Bare(tool, {"--help"});
    EXPECT_EQ(h.exit_code, 0) << h.err;
    // halite's usage line is salt's ("Usage: salt [options] ...").
    const std::string usage = tool == "halite" ? "Usage: " : "usage: ";
    EXPECT_EQ(h.out.rfind(usage + tool + " ", 0), 0u) << h.out;
  }
  struct Case {
    std::string tool;
    std::vector<std::string> args;
    std::string err;  // a part of the message on stderr
    int exit_code = 64;
  };
  for (const Case& c : std::vector<Case>{
           // Salt's messages and codes: optparse errors are 64, an incomplete command 42.
           {"halite", {}, "Cannot execute command without defining a target.", 42},
           {"halite", {"*"}, "Incomplete options passed.", 42},
           {"halite", {"--bogus", "*", "test.ping"}, "halite: error: no such option: --bogus"},
           {"halite", {"*", "test.ping", "--bogus"}, "halite: error: no such option: --bogus"},
           {"halite", {"-t"}, "-t option requires 1 argument"},
           {"halite", {"-E", "-L", "x", "test.ping"}, "--pcre/--list are mutually exclusive"},
           {"halite", {"--out", "xml", "*", "test.ping"}, "xml"},
           {"halite-key", {"--bogus"}, "unknown argument --bogus"},
           {"halite-key", {"-a"}, "-a needs an argument"},
           {"halite-run", {}, "usage: halite-run"},
           {"halite-run", {"--out", "xml", "jobs.list_jobs"}, "xml"},
       }) {
    SCOPED_TRACE(c.tool + " " + ::testing::PrintToString(c.args));
    auto r = master_.Cli(c.tool, c.args, 30s);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.out << r.err;
    EXPECT_NE(r.err.find(c.err), std::string::npos) << r.err;
  }
}

TEST_F(CliTest, ABadConfigExits78BeforeAnythingIsDone) {
  WriteFile(tmp_.path() / "bad.conf", "interface: [not, an, address\n");
  const std::string missing = (tmp_.path() / "no-such.conf").string();
  for (const std::string& conf : {(tmp_.path() / "bad.conf").string(), missing}) {
    for (const auto& [tool, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"halite", {"*", "test.ping"}},
             {"halite-key", {"-L"}},
             {"halite-run", {"jobs.list_jobs"}}}) {
      SCOPED_TRACE(tool + " -c " + conf);
      std::vector<std::string> argv{BinaryPath(tool).string(), "-c", conf};
      argv.insert(argv.end(), args.begin(), args.end());
      auto r = halite::testing::Run(argv, 30s);
      EXPECT_EQ(r.exit_code, 78) << r.out << r.err;
      EXPECT_NE(r.err.find(conf), std::string::npos) << "the message names the file: " << r.err;
    }
  }
}

TEST_F(CliTest, WithoutARunningMasterJobsAndRunnersExit3AndKeysStillWork) {
  auto job = master_.Cli("halite", {"*", "test.ping"}, 60s);
  EXPECT_EQ(job.exit_code, 3) << job.out << job.err;
  auto run = master_.Cli("halite-run", {"jobs.list_jobs"}, 60s);
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  // halite-key works on the files: no master needed.
  WriteFile(master_.dir() / "pki" / "minions_pre" / "web1", "not checked by -L\n");
  auto listed = master_.Cli("halite-key", {"-l", "un"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out, "Unaccepted Keys:\nweb1\n");
}

TEST_F(CliTest, OutcomesOfJobsRunnersAndKeyActionsHaveTheirExitCodes) {
  master_.Start();
  // halite: nothing to target is 2 with Salt's messages.
  auto none = master_.Cli("halite", {"-t", "2", "*", "test.ping"});
  EXPECT_EQ(none.exit_code, 2) << none.out << none.err;
  EXPECT_NE(none.out.find("No minions matched the target."), std::string::npos) << none.out;
  EXPECT_EQ(none.err, "ERROR: No return received\n");
  // halite-run: an unknown runner and a lookup without a jid are usage errors; a known one is 0.
  auto unknown = master_.Cli("halite-run", {"no.such_runner"});
  EXPECT_EQ(unknown.exit_code, 64) << unknown.err;
  EXPECT_NE(unknown.err.find("'no.such_runner' is not available."), std::string::npos);
  auto lookup = master_.Cli("halite-run", {"jobs.lookup_jid"});
  EXPECT_EQ(lookup.exit_code, 64) << lookup.err;
  auto jobs = master_.Cli("halite-run", {"--out", "json", "jobs.list_jobs"});
  EXPECT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_EQ(jobs.out, "{}\n");
  // halite-key: an unknown state is 64; a glob matching nothing and a declined prompt are 1
  // and change nothing.
  auto state = master_.Cli("halite-key", {"-l", "sideways"});
  EXPECT_EQ(state.exit_code, 64) << state.err;
  auto nothing = master_.Cli("halite-key", {"-a", "nobody", "--yes"});
  EXPECT_EQ(nothing.exit_code, 1) << nothing.out;
  EXPECT_NE(nothing.out.find("does not match any unaccepted keys"), std::string::npos)
      << nothing.out;
  WriteFile(master_.dir() / "pki" / "minions_pre" / "web1", "pending\n");
  auto declined = master_.Cli("halite-key", {"-a", "web1"});  // stdin is /dev/null: no answer
  EXPECT_EQ(declined.exit_code, 1) << declined.out;
  EXPECT_TRUE(std::filesystem::exists(master_.dir() / "pki" / "minions_pre" / "web1"));
  EXPECT_FALSE(std::filesystem::exists(master_.dir() / "pki" / "minions" / "web1"));
  auto json = master_.Cli("halite-key", {"--out", "json", "-L"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"minions_pre\": [\n        \"web1\"\n    ]"), std::string::npos)
      << json.out;
}

// salt-key's name_match: -a/-r/-d take a glob or a comma-separated list of globs. halite-key
// works on the files, so no master is needed.
TEST_F(CliTest, KeyActionsTakeGlobsAndCommaSeparatedGlobs) {
  const auto pki = master_.dir() / "pki";
  for (const char* id : {"web1", "web2", "db1", "mail1", "mx"}) {
    WriteFile(pki / "minions_pre" / id, "pending\n");
  }
  auto accepted = master_.Cli("halite-key", {"-a", "web*", "--yes"});
  EXPECT_EQ(accepted.exit_code, 0) << accepted.out << accepted.err;
  EXPECT_EQ(accepted.out,
            "The following keys are going to be accepted:\nUnaccepted Keys:\nweb1\nweb2\n"
            "Key for minion web1 accepted.\nKey for minion web2 accepted.\n");
  auto rejected = master_.Cli("halite-key", {"-r", "db?,mail*", "--yes"});
  EXPECT_EQ(rejected.exit_code, 0) << rejected.out << rejected.err;
  auto listed = master_.Cli("halite-key", {"-L"});
  EXPECT_EQ(listed.out,
            "Accepted Keys:\nweb1\nweb2\nDenied Keys:\nUnaccepted Keys:\nmx\n"
            "Rejected Keys:\ndb1\nmail1\n")
      << listed.out;
  auto deleted = master_.Cli("halite-key", {"-d", "*1", "--yes"});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  auto after = master_.Cli("halite-key", {"-L"});
  EXPECT_EQ(after.out, "Accepted Keys:\nweb2\nDenied Keys:\nUnaccepted Keys:\nmx\nRejected Keys:\n")
      << after.out;
}

// halite-key prints what stock salt-key 3007.8 printed for the same commands run in the same
// order on the same keys (tests/data/salt/salt_key: keys/, commands.txt, expected/ and the
// capture.sh that made them): key listings, -p/-P keys and -f/-F fingerprints as text and
// JSON, --include-rejected/-accepted/-denied, and the no-match message.
TEST_F(CliTest, KeyCommandsPrintWhatStockSaltKeyPrinted) {
  const std::filesystem::path data =
      std::filesystem::path(HALITE_TEST_DATA_DIR) / "salt" / "salt_key";
  const auto pki = master_.dir() / "pki";
  auto key = [&](const char* id) {
    return ReadFileOrEmpty(data / "keys" / (std::string(id) + ".pub"));
  };
  WriteFile(pki / "minions" / "web1", key("web1"));
  WriteFile(pki / "minions_pre" / "web2", key("web2"));
  WriteFile(pki / "minions_pre" / "db2", key("db2"));
  WriteFile(pki / "minions_rejected" / "db1", key("db1"));
  WriteFile(pki / "minions_denied" / "bad1", key("bad1"));
  std::istringstream commands(ReadFileOrEmpty(data / "commands.txt"));
  int n = 0;
  for (std::string line; std::getline(commands, line);) {
    ++n;
    std::vector<std::string> args;
    std::istringstream words(line);
    for (std::string w; words >> w;) args.push_back(w);
    char name[16];
    std::snprintf(name, sizeof name, "%02d.out", n);
    const std::string expected = ReadFileOrEmpty(data / "expected" / name);
    ASSERT_FALSE(expected.empty()) << name;
    auto got = master_.Cli("halite-key", args);
    EXPECT_EQ(got.out, expected) << "halite-key " << line << "\n" << got.err;
  }
  EXPECT_EQ(n, 15);
}

}  // namespace
}  // namespace halite::testing
