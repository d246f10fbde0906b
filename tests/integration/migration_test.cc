// Migration from a running salt-master (docs/migrate.md): halite-master started on a Salt
// master's own config file, pki_dir and cachedir, laid out here byte for byte and mode for
// mode as salt-master 3007 leaves them (tools/salt-migration shows the same with a real
// salt-master and salt-minion). A minion that pinned that master's key signs in with its
// existing key, and nothing Salt wrote is changed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "halite/keys/fs.h"
#include "halite/wire/crypticle.h"
#include "halite/wire/encoding.h"
#include "halite/wire/msgpack.h"
#include "halite/wire/rsa.h"
#include "harness.h"
#include "raw_client.h"
#include "test_keys.h"

namespace halite::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

void WriteWithMode(const fs::path& path, const std::string& content, fs::perms mode) {
  WriteFile(path, content);
  fs::permissions(path, mode);
}

void MakeDir(const fs::path& path, fs::perms mode) {
  fs::create_directories(path);
  fs::permissions(path, mode);
}

constexpr fs::perms k0755 = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec;
constexpr fs::perms k0644 =
    fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read;
constexpr fs::perms k0700 = fs::perms::owner_all;
constexpr fs::perms k0600 = fs::perms::owner_read | fs::perms::owner_write;
constexpr fs::perms k0400 = fs::perms::owner_read;

// A public key as Salt stores a minion's in minions/<id>: the PEM the minion sent, without
// the final newline.
std::string SaltMinionKeyText(const wire::RsaPrivateKey& key) {
  std::string pem = key.PublicKey().ToPem();
  while (!pem.empty() && pem.back() == '\n') pem.pop_back();
  return pem;
}

// A jid of now, as Salt makes them (%Y%m%d%H%M%S%f): younger than keep_jobs_seconds, so the
// master's cleanup keeps it.
std::string JidOfNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d%H%M%S", &tm);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  char tail[8];
  std::snprintf(tail, sizeof tail, "%06lld", static_cast<long long>(micros));
  return std::string(text) + tail;
}

// Every file under `dir` with its bytes and mode, to compare before and after.
std::map<std::string, std::pair<std::string, fs::perms>> Snapshot(const fs::path& dir) {
  std::map<std::string, std::pair<std::string, fs::perms>> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    out[fs::relative(entry.path(), dir).string()] = {ReadFileOrEmpty(entry.path()),
                                                     entry.status().permissions()};
  }
  return out;
}

// The lines of `text` that say a setting is not honoured, without the program's prefix.
std::vector<std::string> SettingLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  const std::string prefix = "halite-master: warning: ";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line.substr(prefix.size()));
  }
  return out;
}

class MigrationTest : public ::testing::Test {
 protected:
  TempDir tmp_;
  zmq::context_t ctx_;
};

TEST_F(MigrationTest, HaliteTakesOverASaltMastersKeysCacheAndConfig) {
  // /etc/salt and / of the Salt master, under the test's dir (Salt's root_dir).
  const fs::path etc = tmp_.path() / "etc" / "salt";
  const fs::path root = tmp_.path() / "root";
  const fs::path pki = root / "etc" / "salt" / "pki" / "master";
  const fs::path cache = root / "var" / "cache" / "salt" / "master";
  const fs::path sock = root / "var" / "run" / "salt" / "master";
  const std::string ip = UniqueLoopbackIp();

  // pki_dir as salt-master 3007 leaves it: 0700, master.pem 0400, the rest world-readable.
  const wire::RsaPrivateKey master_key = NewKey();
  const wire::RsaPrivateKey web_key = NewKey();
  const wire::RsaPrivateKey db_key = NewKey();
  const wire::RsaPrivateKey old_key = NewKey();
  MakeDir(pki, k0700);
  for (const char* dir :
       {"minions", "minions_pre", "minions_rejected", "minions_denied", "minions_autosign"}) {
    MakeDir(pki / dir, k0755);
  }
  WriteWithMode(pki / "master.pem", master_key.ToPem(), k0400);
  WriteWithMode(pki / "master.pub", master_key.PublicKey().ToPem(), k0644);
  WriteWithMode(pki / "minions" / "web1", SaltMinionKeyText(web_key), k0644);
  WriteWithMode(pki / "minions_pre" / "db1", SaltMinionKeyText(db_key), k0644);
  WriteWithMode(pki / "minions_rejected" / "old1", SaltMinionKeyText(old_key), k0644);

  // cachedir: Salt's .root_key, web1's grains and pillar, one job web1 answered (local_cache:
  // jobs/<sha256(jid)[:2]>/<rest>/), and sessions, proc, ... that halite does not use.
  MakeDir(cache, k0755);
  for (const char* dir : {"proc", "queues", "syndics", "tokens", "file_lists/roots"}) {
    MakeDir(cache / dir, k0755);
  }
  WriteWithMode(cache / ".root_key", wire::Crypticle::GenerateKeyString(), k0600);
  // web1's session key (Salt 3007 keeps them as halite does: a Crypticle key string, 0600).
  MakeDir(cache / "sessions", k0755);
  const std::string web_session = wire::Crypticle::GenerateKeyString();
  WriteWithMode(cache / "sessions" / "web1", web_session, k0600);
  MakeDir(cache / "minions" / "web1", k0755);
  WriteWithMode(cache / "minions" / "web1" / "data.p",
                wire::Pack(wire::Value::MapOf(
                    {{"grains", wire::Value::MapOf({{"id", "web1"}, {"os", "Debian"}})},
                     {"pillar", wire::Value::MapOf({{"role", "web"}})}})),
                k0644);
  const std::string jid = JidOfNow();
  const std::string hash = wire::Sha256Hex(jid);
  const fs::path job = cache / "jobs" / hash.substr(0, 2) / hash.substr(2);
  MakeDir(job / "web1", k0755);
  fs::permissions(cache / "jobs", k0755);
  fs::permissions(job.parent_path(), k0755);
  WriteWithMode(job / "jid", jid, k0644);
  WriteWithMode(job / ".load.p",
                wire::Pack(wire::Value::MapOf({{"fun", "cmd.run"},
                                               {"arg", wire::Array{"echo answered-by-salt"}},
                                               {"tgt", "web1"},
                                               {"jid", jid},
                                               {"ret", ""},
                                               {"tgt_type", "glob"},
                                               {"user", "root"}})),
                k0644);
  WriteWithMode(job / ".minions.p", wire::Pack(wire::Array{"web1"}), k0644);
  WriteWithMode(job / "web1" / "return.p", wire::Pack("answered-by-salt"), k0644);
  // The sockets a stopped salt-master leaves behind in sock_dir.
  MakeDir(sock, k0755);
  for (const char* name :
       {"master_event_pub.ipc", "master_event_pull.ipc", "publish_pull.ipc", "workers.ipc"}) {
    WriteWithMode(sock / name, "", k0600);
  }

  MakeDir(root / "var" / "log" / "salt",
          fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  // /etc/salt/master with Salt's paths under root_dir, master.d/*.conf, and settings halite
  // ignores, does not support, or honours without saying (fileserver_backend: [roots]).
  MakeDir(tmp_.path() / "srv" / "salt", k0755);
  MakeDir(tmp_.path() / "srv" / "pillar", k0755);
  fs::create_directories(etc / "master.d");
  WriteFile(etc / "master", "interface: " + ip +
                                "\n"
                                "publish_port: 4505\n"
                                "ret_port: 4506\n"
                                "user: root\n"
                                "root_dir: " +
                                root.string() +
                                "\n"
                                "pki_dir: /etc/salt/pki/master\n"
                                "cachedir: /var/cache/salt/master\n"
                                "sock_dir: /var/run/salt/master\n"
                                "pidfile: /var/run/salt-master.pid\n"
                                "log_file: /var/log/salt/master\n"
                                "key_logfile: /var/log/salt/key\n"
                                "log_level: info\n"
                                "hash_type: sha256\n"
                                "fileserver_backend:\n  - roots\n"
                                "file_roots:\n  base:\n    - " +
                                (tmp_.path() / "srv" / "salt").string() +
                                "\n"
                                "pillar_roots:\n  base:\n    - " +
                                (tmp_.path() / "srv" / "pillar").string() +
                                "\n"
                                "external_auth:\n  pam:\n    ops%:\n      - test.*\n"
                                "health_port: 0\n");
  WriteFile(etc / "master.d" / "reactor.conf",
            "reactor:\n  - 'salt/minion/*/start':\n    - /srv/reactor/start.sls\n");
  const auto pki_before = Snapshot(pki);
  const auto cache_before = Snapshot(cache);

  MasterSpec spec;
  spec.id = "m1";
  spec.ip = ip;
  spec.config_file = etc / "master";
  spec.sock_dir = sock;
  MasterUnderTest master(tmp_.path(), spec);
  master.Start();

  // Every setting halite does not honour, one line each, at start and with --check alike.
  const std::vector<std::string> at_start = SettingLines(master.Log());
  EXPECT_THAT(at_start, ::testing::IsSupersetOf(
                            {::testing::StartsWith("pidfile: ignored: "),
                             ::testing::StartsWith("key_logfile: ignored: "),
                             ::testing::StartsWith("reactor: not supported: no reactor")}))
      << master.Log();
  EXPECT_THAT(at_start, ::testing::Each(Not(HasSubstr("fileserver_backend"))));
  EXPECT_THAT(at_start, ::testing::Each(Not(HasSubstr("hash_type"))));
  EXPECT_THAT(at_start, ::testing::Each(Not(HasSubstr("unknown key"))));
  // Read now (halite-api and the master's token publishes: docs/api.md), so not listed.
  EXPECT_THAT(at_start, ::testing::Each(Not(HasSubstr("external_auth"))));
  const CommandResult check = master.Cli("halite-master", {"--check"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(SettingLines(check.err), at_start) << check.err;
  EXPECT_THAT(ReadFileOrEmpty(root / "var" / "log" / "salt" / "master"),
              HasSubstr("config: reactor: not supported"));

  // web1 pinned this master's key when it first signed in to salt-master: halite answers with
  // that key, signs with it, and accepts web1's key from minions/ without halite-key.
  const auto pinned = wire::RsaPublicKey::FromPem(ReadFileOrEmpty(pki / "master.pub"));
  ASSERT_TRUE(pinned.ok());
  RawMinion web("web1", web_key, "tcp://" + ip + ":4506");
  auto signed_in = web.Auth(ctx_, *pinned);
  ASSERT_TRUE(signed_in.ok()) << signed_in.error().ToString() << master.Log();
  EXPECT_TRUE(signed_in->signature_ok);
  EXPECT_EQ(*signed_in->inner.FindStr("pub_key"), wire::CleanKey(pinned->ToPem()));
  ASSERT_TRUE(signed_in->aes.has_value()) << master.Log();
  ASSERT_TRUE(signed_in->session.has_value());
  // ...and the session key salt-master gave it, still within publish_session.
  EXPECT_EQ(signed_in->session->key_string(), web_session);
  // A minion in minions_pre stays pending, one in minions_rejected stays rejected.
  RawMinion db("db1", db_key, "tcp://" + ip + ":4506");
  auto pending = db.Auth(ctx_, *pinned);
  ASSERT_TRUE(pending.ok()) << pending.error().ToString();
  EXPECT_EQ(pending->inner.Find("ret")->boolean(), std::optional<bool>(true));
  EXPECT_FALSE(pending->aes.has_value());
  RawMinion old("old1", old_key, "tcp://" + ip + ":4506");
  auto rejected = old.Auth(ctx_, *pinned);
  ASSERT_TRUE(rejected.ok()) << rejected.error().ToString();
  EXPECT_EQ(rejected->inner.Find("ret")->boolean(), std::optional<bool>(false));

  const CommandResult listed = master.Cli("halite-key", {"-L"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out,
            "Accepted Keys:\nweb1\nDenied Keys:\nUnaccepted Keys:\ndb1\nRejected Keys:\nold1\n");

  // salt-master's job stays readable, through halite's runner.
  const CommandResult looked_up = master.Cli("halite-run", {"jobs.lookup_jid", jid});
  EXPECT_EQ(looked_up.exit_code, 0) << looked_up.err;
  EXPECT_EQ(looked_up.out, "web1:\n    answered-by-salt\n");

  // Nothing Salt wrote changed: not one byte, not one mode (roll-back needs them as they were).
  master.Stop();
  const auto pki_after = Snapshot(pki);
  const auto cache_after = Snapshot(cache);
  for (const auto& [path, before] : pki_before) {
    ASSERT_TRUE(pki_after.count(path)) << path << " is gone";
    EXPECT_EQ(pki_after.at(path).first, before.first) << path;
    EXPECT_EQ(pki_after.at(path).second, before.second) << path;
  }
  for (const auto& [path, before] : cache_before) {
    ASSERT_TRUE(cache_after.count(path)) << path << " is gone";
    EXPECT_EQ(cache_after.at(path).first, before.first) << path;
    EXPECT_EQ(cache_after.at(path).second, before.second) << path;
  }
  EXPECT_EQ(fs::status(pki).permissions(), k0700);
}

}  // namespace
}  // namespace halite::testing
