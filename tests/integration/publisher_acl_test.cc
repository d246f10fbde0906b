// publisher_acl and publisher_acl_blacklist as a local user meets them: a real halite-master
// and two halite-minions, and the `halite` CLI run as the system users nobody and daemon
// (setpriv drops root for the one command, as `su` would), which read their own key from
// <cachedir>/.<user>_key. Needs root (to start the CLI as another user); skipped otherwise.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace halite::testing {
namespace {

using Json = nlohmann::json;

struct AclServers {
  TempDir tmp;
  std::unique_ptr<MasterUnderTest> master;
  std::vector<std::unique_ptr<MinionUnderTest>> minions;

  AclServers() {
    MasterSpec spec;
    spec.auto_accept = true;
    spec.extra_yaml =
        "publisher_acl:\n"
        "  nobody: ['test.ping', 'test.echo', {'web*': ['cmd.run']}]\n"
        "  daemon: ['.*']\n"
        "publisher_acl_blacklist:\n"
        "  users: ['daemon']\n"
        "  modules: ['test\\.arg.*']\n";
    master = std::make_unique<MasterUnderTest>(tmp.path(), spec);
    master->Start();
    for (const char* id : {"web1", "db1"}) {
      MinionSpec m;
      m.id = id;
      m.master_ip = master->ip();
      minions.push_back(std::make_unique<MinionUnderTest>(tmp.path(), m));
      minions.back()->Start();
    }
    std::string last;
    if (!EveryMinionAnswers(*master, "*", {"test.ping"}, 2, &last)) {
      throw std::runtime_error("the minions did not answer: " + last);
    }
  }
};

class PublisherAclTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() == 0) servers_ = new AclServers();
  }
  static void TearDownTestSuite() {
    delete servers_;
    servers_ = nullptr;
  }
  void SetUp() override {
    if (!servers_) GTEST_SKIP() << "needs root, to run the CLI as nobody and daemon";
  }
  void TearDown() override {
    if (HasFailure() && servers_) std::cerr << "master log:\n" << servers_->master->Log();
  }

  // `halite -c <config> --out json -t 10 ARGS...` as system user `user` (ARGS may begin with
  // --static: every return in one JSON document).
  static CommandResult HaliteAs(const std::string& user, const std::vector<std::string>& args) {
    const passwd* pw = ::getpwnam(user.c_str());
    if (!pw) return {};
    std::vector<std::string> argv{"/usr/bin/setpriv",
                                  "--reuid=" + std::to_string(pw->pw_uid),
                                  "--regid=" + std::to_string(pw->pw_gid),
                                  "--clear-groups",
                                  BinaryPath("halite").string(),
                                  "-c",
                                  servers_->master->config().string(),
                                  "--out",
                                  "json",
                                  "-t",
                                  "10"};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::Run(argv);
  }
  static Json Out(const CommandResult& r) { return Json::parse(r.out, nullptr, false); }

  static AclServers* servers_;
};

AclServers* PublisherAclTest::servers_ = nullptr;

TEST_F(PublisherAclTest, TheMasterWritesAKeyForEachUserOnlyThatUserCanRead) {
  const auto cache = servers_->master->dir() / "cache";
  for (const char* user : {"nobody", "daemon"}) {
    struct stat st {};
    const auto file = cache / ("." + std::string(user) + "_key");
    ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 07777, 0400u) << file;
    EXPECT_EQ(st.st_uid, ::getpwnam(user)->pw_uid) << file;
  }
  // Nobody else gets one; the root key stays root's.
  EXPECT_FALSE(std::filesystem::exists(cache / ".bin_key"));
  struct stat root {};
  ASSERT_EQ(::stat((cache / ".root_key").c_str(), &root), 0);
  EXPECT_EQ(root.st_mode & 07777, 0600u);
  EXPECT_EQ(root.st_uid, 0u);
  // A user publisher_acl does not name has no key to present.
  auto bin = HaliteAs("bin", {"*", "test.ping"});
  EXPECT_EQ(bin.exit_code, 3) << bin.out << bin.err;
  EXPECT_NE(bin.err.find(".bin_key (is bin in the master's publisher_acl"), std::string::npos)
      << bin.err;
}

TEST_F(PublisherAclTest, AnAllowedFunctionRunsAndOthersAreRefused) {
  auto echo = HaliteAs("nobody", {"--static", "*", "test.echo", "hello"});
  ASSERT_EQ(echo.exit_code, 0) << echo.out << echo.err;
  EXPECT_EQ(Out(echo), Json::parse(R"({"web1": "hello", "db1": "hello"})")) << echo.out;
  // The job is nobody's.
  auto jobs = servers_->master->Cli("halite-run", {"--out", "json", "jobs.list_jobs"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  bool found = false;
  const Json listed = Json::parse(jobs.out, nullptr, false);
  for (const auto& [jid, job] : listed.items()) {
    if (job["Function"] == "test.echo" && job["Arguments"] == Json::array({"hello"})) {
      EXPECT_EQ(job["User"], "nobody");
      found = true;
    }
  }
  EXPECT_TRUE(found) << jobs.out;
  // Not in nobody's entry: Salt's refusal, exit 1, nothing published.
  auto grains = HaliteAs("nobody", {"*", "grains.items"});
  EXPECT_EQ(grains.exit_code, 1) << grains.out << grains.err;
  EXPECT_EQ(Out(grains), "Authorization error occurred.") << grains.out;
  // A target-scoped entry: cmd.run on web* only.
  auto web = HaliteAs("nobody", {"--static", "web*", "cmd.run", "echo scoped"});
  ASSERT_EQ(web.exit_code, 0) << web.out << web.err;
  EXPECT_EQ(Out(web), Json::parse(R"({"web1": "scoped"})")) << web.out;
  auto all = HaliteAs("nobody", {"*", "cmd.run", "echo scoped"});
  EXPECT_EQ(all.exit_code, 1) << all.out << all.err;
  EXPECT_EQ(Out(all), "Authorization error occurred.") << all.out;
  // Root is not bound by publisher_acl.
  auto root =
      servers_->master->Cli("halite", {"--out", "json", "--static", "*", "cmd.run", "echo r"});
  EXPECT_EQ(root.exit_code, 0) << root.out << root.err;
}

TEST_F(PublisherAclTest, TheBlacklistRefusesItsUsersAndModulesForEveryone) {
  // daemon's entry allows everything, but daemon is blacklisted.
  auto daemon = HaliteAs("daemon", {"*", "test.ping"});
  EXPECT_EQ(daemon.exit_code, 1) << daemon.out << daemon.err;
  EXPECT_EQ(Out(daemon), "Authorization error occurred.") << daemon.out;
  // A blacklisted module is refused to root as well, as Salt's ClearFuncs.publish does.
  auto root = servers_->master->Cli("halite", {"--out", "json", "*", "test.arg", "x"});
  EXPECT_EQ(root.exit_code, 1) << root.out << root.err;
  EXPECT_EQ(Json::parse(root.out, nullptr, false), "Authorization error occurred.") << root.out;
  auto nobody = HaliteAs("nobody", {"*", "test.ping"});
  EXPECT_EQ(nobody.exit_code, 0) << nobody.out << nobody.err;
  EXPECT_NE(nobody.out.find("\"web1\": true"), std::string::npos) << nobody.out;
  EXPECT_NE(nobody.out.find("\"db1\": true"), std::string::npos) << nobody.out;
}

}  // namespace
}  // namespace halite::testing
