#include "halite/config/master_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace halite::config {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

// A fresh directory under the test's temp dir, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::path(testing::TempDir()) / "halite-config-XXXXXX");
    HALITE_CHECK(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path Write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream(file) << text;
    return file;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

Loaded<MasterConfig> ParseOk(std::string_view yaml) {
  Result<Loaded<MasterConfig>> loaded = ParseMasterConfig(yaml);
  EXPECT_TRUE(loaded.ok()) << loaded.error().ToString();
  return loaded.ok() ? std::move(loaded).value() : Loaded<MasterConfig>{};
}

Error ParseError(std::string_view yaml) {
  Result<Loaded<MasterConfig>> loaded = ParseMasterConfig(yaml);
  EXPECT_FALSE(loaded.ok());
  return loaded.ok() ? Error::Internal("parsed") : std::move(loaded).error();
}

TEST(MasterConfigTest, EmptyDocumentGivesSaltDefaults) {
  for (std::string_view yaml : {"", "# only a comment\n", "~\n", "---\n"}) {
    SCOPED_TRACE(yaml);
    const Loaded<MasterConfig> loaded = ParseOk(yaml);
    const MasterConfig& c = loaded.config;
    EXPECT_THAT(loaded.warnings, IsEmpty());
    EXPECT_EQ(c.id, DefaultId());
    EXPECT_EQ(c.interface, "0.0.0.0");
    EXPECT_EQ(c.publish_port, 4505);
    EXPECT_EQ(c.ret_port, 4506);
    EXPECT_EQ(c.root_dir, "");
    EXPECT_EQ(c.pki_dir, "/etc/salt/pki/master");
    EXPECT_EQ(c.cachedir, "/var/cache/salt/master");
    EXPECT_EQ(c.sock_dir, "/var/run/salt/master");
    EXPECT_EQ(c.log_file, "");
    EXPECT_EQ(c.log_level, "warning");
    EXPECT_EQ(c.user, "root");
    EXPECT_FALSE(c.auto_accept);
    EXPECT_FALSE(c.open_mode);
    EXPECT_EQ(c.autosign_file, "");
    EXPECT_EQ(c.autoreject_file, "");
    EXPECT_EQ(c.autosign_timeout, std::chrono::minutes(120));
    EXPECT_FALSE(c.permissive_pki_access);
    EXPECT_EQ(c.keysize, 2048);
    EXPECT_EQ(c.max_minions, 0);
    EXPECT_TRUE(c.auth_events);
    EXPECT_TRUE(c.minion_data_cache);
    EXPECT_EQ(c.worker_threads, 5);
    EXPECT_EQ(c.keep_jobs_seconds, std::chrono::seconds(86400));
    EXPECT_EQ(c.master_job_cache, "local_cache");
    EXPECT_TRUE(c.job_cache.IsMap());
    EXPECT_EQ(c.job_cache.size(), 0u);
    EXPECT_EQ(c.publish_session, std::chrono::seconds(86400));
    EXPECT_EQ(c.request_server_ttl, std::chrono::seconds(300));
    EXPECT_EQ(c.loop_interval, std::chrono::seconds(60));
    EXPECT_TRUE(c.rotate_aes_key);
    EXPECT_TRUE(c.sign_pub_messages);
    EXPECT_EQ(c.publish_signing_algorithm, "PKCS1v15-SHA1");
    EXPECT_FALSE(c.zmq_filtering);
    EXPECT_EQ(c.pub_hwm, 1000);
    EXPECT_EQ(c.zmq_backlog, 1000);
    EXPECT_FALSE(c.ipv6);
    EXPECT_TRUE(c.tcp_keepalive);
    EXPECT_EQ(c.tcp_keepalive_idle, 300);
    EXPECT_EQ(c.tcp_keepalive_cnt, -1);
    EXPECT_EQ(c.tcp_keepalive_intvl, -1);
    using Roots = std::map<std::string, std::vector<std::string>>;
    EXPECT_EQ(c.file_roots, (Roots{{"base", {"/srv/salt"}}}));
    EXPECT_EQ(c.pillar_roots, (Roots{{"base", {"/srv/pillar"}}}));
    EXPECT_EQ(c.timeout, std::chrono::seconds(5));
    EXPECT_EQ(c.gather_job_timeout, std::chrono::seconds(10));
    EXPECT_FALSE(c.presence_events);
    EXPECT_EQ(c.cluster_id, "");
    EXPECT_THAT(c.cluster_peers, IsEmpty());
    EXPECT_EQ(c.cluster_pki_dir, "");
    EXPECT_EQ(c.cluster_pool_port, 4520);
    EXPECT_EQ(c.health_port, 4510);
    EXPECT_EQ(c.max_request_bytes, 100u * 1024 * 1024);
    EXPECT_EQ(c.auth_queue_timeout_ms, std::chrono::milliseconds(4000));
    EXPECT_EQ(c.auth_reply_cache_wait_ms, std::chrono::milliseconds(1000));
    EXPECT_EQ(c.return_batch_max, 512);
    EXPECT_EQ(c.return_fsync_interval_ms, std::chrono::milliseconds(0));
  }
}

TEST(MasterConfigTest, EveryFieldIsParsed) {
  const Loaded<MasterConfig> loaded = ParseOk(R"(
id: m1.example
interface: "::"
publish_port: 14505
ret_port: 14506
pki_dir: /p/pki
cachedir: /p/cache
sock_dir: /p/sock
log_file: /p/log/master
log_level: debug
user: salt
auto_accept: yes
open_mode: True
autosign_file: /p/autosign.conf
autoreject_file: /p/autoreject.conf
autosign_timeout: 30
permissive_pki_access: true
keysize: 4096
max_minions: 100
auth_events: false
minion_data_cache: off
worker_threads: 16
keep_jobs_seconds: 3600
master_job_cache: postgres
job_cache:
  dsn: host=10.0.0.9 dbname=halite
  pool: 8
publish_session: 3600
request_server_ttl: 30
loop_interval: 10
rotate_aes_key: false
sign_pub_messages: false
publish_signing_algorithm: PKCS1v15-SHA224
zmq_filtering: true
pub_hwm: 0
zmq_backlog: 5000
ipv6: true
tcp_keepalive: false
tcp_keepalive_idle: 60
tcp_keepalive_cnt: 5
tcp_keepalive_intvl: 10
file_roots:
  base: [/srv/salt, /srv/formulas]
  dev:
    - /srv/dev
pillar_roots:
  base: [/srv/pillar2]
timeout: 20
gather_job_timeout: 30
presence_events: true
cluster_id: prod
cluster_peers: [10.0.0.2, 10.0.0.3]
cluster_pki_dir: /shared/pki
cluster_pool_port: 14520
health_port: 0
max_request_bytes: 1048576
auth_queue_timeout_ms: 250
auth_reply_cache_wait_ms: -1
return_batch_max: 64
return_fsync_interval_ms: 5
)");
  const MasterConfig& c = loaded.config;
  // Parsed, and said to do nothing (yet), never silently accepted; presence_events is
  // honoured (master/presence.h), so it is not listed.
  EXPECT_THAT(loaded.warnings,
              ElementsAre(StartsWith("zmq_filtering: not supported: True is not implemented"),
                          StartsWith("user: not supported: halite-master does not switch")));
  EXPECT_EQ(c.id, "m1.example");
  EXPECT_EQ(c.interface, "::");
  EXPECT_EQ(c.publish_port, 14505);
  EXPECT_EQ(c.ret_port, 14506);
  EXPECT_EQ(c.pki_dir, "/p/pki");
  EXPECT_EQ(c.cachedir, "/p/cache");
  EXPECT_EQ(c.sock_dir, "/p/sock");
  EXPECT_EQ(c.log_file, "/p/log/master");
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.user, "salt");
  EXPECT_TRUE(c.auto_accept);
  EXPECT_TRUE(c.open_mode);
  EXPECT_EQ(c.autosign_file, "/p/autosign.conf");
  EXPECT_EQ(c.autoreject_file, "/p/autoreject.conf");
  EXPECT_EQ(c.autosign_timeout, std::chrono::minutes(30));
  EXPECT_TRUE(c.permissive_pki_access);
  EXPECT_EQ(c.keysize, 4096);
  EXPECT_EQ(c.max_minions, 100);
  EXPECT_FALSE(c.auth_events);
  EXPECT_FALSE(c.minion_data_cache);
  EXPECT_EQ(c.worker_threads, 16);
  EXPECT_EQ(c.keep_jobs_seconds, std::chrono::seconds(3600));
  EXPECT_EQ(c.master_job_cache, "postgres");
  ASSERT_TRUE(c.job_cache.IsMap());
  EXPECT_EQ(c.job_cache["dsn"].as<std::string>(), "host=10.0.0.9 dbname=halite");
  EXPECT_EQ(c.job_cache["pool"].as<int>(), 8);
  EXPECT_EQ(c.publish_session, std::chrono::seconds(3600));
  EXPECT_EQ(c.request_server_ttl, std::chrono::seconds(30));
  EXPECT_EQ(c.loop_interval, std::chrono::seconds(10));
  EXPECT_FALSE(c.rotate_aes_key);
  EXPECT_FALSE(c.sign_pub_messages);
  EXPECT_EQ(c.publish_signing_algorithm, "PKCS1v15-SHA224");
  EXPECT_TRUE(c.zmq_filtering);
  EXPECT_EQ(c.pub_hwm, 0);
  EXPECT_EQ(c.zmq_backlog, 5000);
  EXPECT_TRUE(c.ipv6);
  EXPECT_FALSE(c.tcp_keepalive);
  EXPECT_EQ(c.tcp_keepalive_idle, 60);
  EXPECT_EQ(c.tcp_keepalive_cnt, 5);
  EXPECT_EQ(c.tcp_keepalive_intvl, 10);
  using Roots = std::map<std::string, std::vector<std::string>>;
  EXPECT_EQ(c.file_roots, (Roots{{"base", {"/srv/salt", "/srv/formulas"}}, {"dev", {"/srv/dev"}}}));
  EXPECT_EQ(c.pillar_roots, (Roots{{"base", {"/srv/pillar2"}}}));
  EXPECT_EQ(c.timeout, std::chrono::seconds(20));
  EXPECT_EQ(c.gather_job_timeout, std::chrono::seconds(30));
  EXPECT_TRUE(c.presence_events);
  EXPECT_EQ(c.cluster_id, "prod");
  EXPECT_THAT(c.cluster_peers, ElementsAre("10.0.0.2", "10.0.0.3"));
  EXPECT_EQ(c.cluster_pki_dir, "/shared/pki");
  EXPECT_EQ(c.cluster_pool_port, 14520);
  EXPECT_EQ(c.health_port, 0);
  EXPECT_EQ(c.max_request_bytes, 1048576u);
  EXPECT_EQ(c.auth_queue_timeout_ms, std::chrono::milliseconds(250));
  EXPECT_EQ(c.auth_reply_cache_wait_ms, std::chrono::milliseconds(-1));
  EXPECT_EQ(c.return_batch_max, 64);
  EXPECT_EQ(c.return_fsync_interval_ms, std::chrono::milliseconds(5));
}

TEST(MasterConfigTest, RootDirIsPrefixedToLocalPathsButNotClusterPkiDir) {
  const MasterConfig c = ParseOk(R"(
root_dir: /opt/halite/
cachedir: /opt/halite/cache
log_file: /log/master
autosign_file: /etc/salt/autosign.conf
cluster_id: c1
cluster_pki_dir: /shared/pki
)")
                             .config;
  EXPECT_EQ(c.pki_dir, "/opt/halite/etc/salt/pki/master");
  EXPECT_EQ(c.cachedir, "/opt/halite/cache");  // already under root_dir
  EXPECT_EQ(c.sock_dir, "/opt/halite/var/run/salt/master");
  EXPECT_EQ(c.log_file, "/opt/halite/log/master");
  EXPECT_EQ(c.autosign_file, "/opt/halite/etc/salt/autosign.conf");
  EXPECT_EQ(c.autoreject_file, "");  // empty stays empty
  EXPECT_EQ(c.cluster_pki_dir, "/shared/pki");
}

TEST(MasterConfigTest, RootDirSlashChangesNothing) {
  const MasterConfig c = ParseOk("root_dir: /\n").config;
  EXPECT_EQ(c.pki_dir, "/etc/salt/pki/master");
  EXPECT_EQ(c.log_file, "");
}

TEST(MasterConfigTest, KeepJobsHoursAreUsedWithoutKeepJobsSeconds) {
  const Loaded<MasterConfig> loaded = ParseOk("keep_jobs: 48\n");
  EXPECT_EQ(loaded.config.keep_jobs_seconds, std::chrono::seconds(48 * 3600));
  EXPECT_THAT(loaded.warnings, ElementsAre(HasSubstr("keep_jobs: deprecated")));
}

TEST(MasterConfigTest, KeepJobsIsIgnoredWhenKeepJobsSecondsIsSet) {
  const Loaded<MasterConfig> loaded = ParseOk("keep_jobs: 48\nkeep_jobs_seconds: 600\n");
  EXPECT_EQ(loaded.config.keep_jobs_seconds, std::chrono::seconds(600));
  EXPECT_THAT(loaded.warnings, ElementsAre(HasSubstr("keep_jobs: ignored")));
}

TEST(MasterConfigTest, NodegroupsTakeStringAndListForms) {
  const Loaded<MasterConfig> loaded = ParseOk(R"(
nodegroups:
  web: 'G@os:Debian and  web*'
  dbs: [db1, db2]
  all: N@web or N@dbs
)");
  using Words = std::vector<std::string>;
  EXPECT_EQ(loaded.config.nodegroups.at("web"), (Words{"G@os:Debian", "and", "web*"}));
  EXPECT_EQ(loaded.config.nodegroups.at("dbs"), (Words{"db1", "db2"}));
  EXPECT_EQ(loaded.config.nodegroups.at("all"), (Words{"N@web", "or", "N@dbs"}));
  EXPECT_TRUE(loaded.warnings.empty());
  EXPECT_THAT(Lines(ParseError("nodegroups:\n  bad: {a: 1}\n").message),
              ElementsAre("nodegroups.bad: must be a string or a list of strings"));
}

TEST(MasterConfigTest, DefaultIncludeAndIncludeMergeAsSaltsIncludeConfig) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "master.d");
  std::filesystem::create_directories(dir.path() / "extra");
  dir.Write("master.d/10-workers.conf", "worker_threads: 7\nnodegroups:\n  a: web*\n");
  dir.Write("master.d/20-more.conf", "nodegroups:\n  b: [db1]\nfile_roots:\n  base: [/srv/b]\n");
  dir.Write("master.d/ignored.txt", "worker_threads: 99\n");
  dir.Write("extra/timeout.conf", "timeout: 9\ninclude: nested.conf\n");
  dir.Write("extra/nested.conf", "gather_job_timeout: 11\n");
  const auto path = dir.Write("master",
                              "worker_threads: 3\ntimeout: 2\nkeysize: 4096\n"
                              "include: [extra/*.conf, nothing/*.conf]\n");
  auto loaded = LoadMasterConfig(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
  const MasterConfig& c = loaded->config;
  EXPECT_EQ(c.worker_threads, 7);  // included files win over the main file, as in Salt
  EXPECT_EQ(c.timeout, std::chrono::seconds(9));
  EXPECT_EQ(c.gather_job_timeout, std::chrono::seconds(11));
  EXPECT_EQ(c.keysize, 4096);
  EXPECT_EQ(c.nodegroups.size(), 2u);  // maps from several files merge
  EXPECT_EQ(c.file_roots.at("base"), std::vector<std::string>{"/srv/b"});
  EXPECT_THAT(loaded->warnings, ElementsAre(HasSubstr("nothing/*.conf' matches no files")));

  // default_include names other files; a broken included file is an error naming it.
  dir.Write("other.conf", "worker_threads: [\n");
  const auto own = dir.Write("master2", "default_include: other.conf\n");
  auto broken = LoadMasterConfig(own);
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.error().message, HasSubstr("other.conf"));
}

TEST(MasterConfigTest, PeerAndPeerRunAreIdRegexToFunctionRegexes) {
  const Loaded<MasterConfig> loaded =
      ParseOk("peer:\n  'web.*': [test.*, 'cmd.run']\npeer_run:\n  .*: [manage.up]\n");
  EXPECT_THAT(loaded.warnings, IsEmpty());
  EXPECT_EQ(loaded.config.peer.at("web.*"), (std::vector<std::string>{"test.*", "cmd.run"}));
  EXPECT_EQ(loaded.config.peer_run.at(".*"), std::vector<std::string>{"manage.up"});
  EXPECT_THAT(Lines(ParseError("peer:\n  .*: test.ping\n").message),
              ElementsAre(HasSubstr("peer..*: expected a list of strings")));
}

TEST(MasterConfigTest, JobCacheTakesSaltsBoolean) {
  const Loaded<MasterConfig> off = ParseOk("job_cache: False\n");
  EXPECT_FALSE(off.config.store_returns);
  EXPECT_THAT(off.warnings, IsEmpty());
  const Loaded<MasterConfig> on = ParseOk("job_cache: True\n");
  EXPECT_TRUE(on.config.store_returns);
  EXPECT_THAT(on.warnings, IsEmpty());
  const Loaded<MasterConfig> map = ParseOk("job_cache:\n  dir: /var/x\n");
  EXPECT_TRUE(map.config.store_returns);
  EXPECT_TRUE(map.config.job_cache.IsMap());
  EXPECT_THAT(Lines(ParseError("job_cache: maybe\n").message),
              ElementsAre(HasSubstr("job_cache: expected true or false")));
}

TEST(MasterConfigTest, FiveInvalidValuesAreReportedTogether) {
  const Error error = ParseError(R"(
publish_port: 0
interface: salt.example.com
worker_threads: 0
master_job_cache: mongo
pki_dir: etc/pki
)");
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(Lines(error.message),
              ElementsAre("publish_port: must be between 1 and 65535 (got 0)",
                          AllOf(StartsWith("interface: must be an IP address"),
                                HasSubstr("never resolves host names"),
                                HasSubstr("(got 'salt.example.com')")),
                          "worker_threads: must be between 1 and 1024 (got 0)",
                          "master_job_cache: must be one of local_cache, postgres (got 'mongo')",
                          "pki_dir: must be an absolute path (got 'etc/pki')"))
      << error.message;
}

TEST(MasterConfigTest, ProblemsFromFileAreTheSameLines) {
  TempDir dir;
  Result<Loaded<MasterConfig>> loaded =
      LoadMasterConfig(dir.Write("master", "ret_port: 70000\nlog_level: loud\n"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(Lines(loaded.error().message),
              ElementsAre("ret_port: must be between 1 and 65535 (got 70000)",
                          StartsWith("log_level: must be one of trace, debug")));
}

TEST(MasterConfigTest, GpgKeydirDefaultsToTheConfigDirsGpgkeysAsSaltsDoes) {
  TempDir dir;
  auto plain = LoadMasterConfig(dir.Write("master", "id: m1\n"));
  ASSERT_TRUE(plain.ok()) << plain.error().ToString();
  EXPECT_EQ(plain->config.gpg_keydir,
            (std::filesystem::path(dir.path()) / "gpgkeys").lexically_normal().string());
  auto set = LoadMasterConfig(dir.Write("master", "gpg_keydir: /srv/keys\n"));
  ASSERT_TRUE(set.ok()) << set.error().ToString();
  EXPECT_EQ(set->config.gpg_keydir, "/srv/keys");
}

TEST(MasterConfigTest, UnknownKeysAreWarningsNotErrors) {
  const Loaded<MasterConfig> loaded = ParseOk("foo: 1\nid: m1\nno_such_setting: []\n");
  EXPECT_THAT(loaded.warnings, ElementsAre("unknown key 'foo' (ignored)",
                                           "unknown key 'no_such_setting' (ignored)"));
  EXPECT_EQ(loaded.config.id, "m1");
}

// A stock /etc/salt/master lists what halite does not do, one line per key, in file order:
// Salt's settings say "ignored" or "not supported" and why; values halite honours anyway
// (Salt's "off", the one backend it has) say nothing; keys nobody knows stay "unknown".
TEST(MasterConfigTest, SaltSettingsHaliteLacksAreListedIgnoredOrNotSupported) {
  const Loaded<MasterConfig> loaded = ParseOk(R"(
pidfile: /var/run/salt-master.pid
reactor:
  - 'salt/minion/*/start': [/srv/reactor/start.sls]
fileserver_backend: [roots]
hash_type: sha256
pillar_cache: False
external_auth: {}
gitfs_remotes: [https://example.com/states.git]
mworker_niceness: 5
fileserver_backend_typo: [roots]
transport: tcp
log_level_logfile: debug
)");
  EXPECT_THAT(loaded.warnings,
              ElementsAre(StartsWith("pidfile: ignored: halite-master writes no pid file"),
                          StartsWith("reactor: not supported: no reactor"),
                          StartsWith("gitfs_remotes: not supported: only the roots backend"),
                          StartsWith("mworker_niceness: ignored: "),
                          "unknown key 'fileserver_backend_typo' (ignored)",
                          StartsWith("transport: not supported: only the ZeroMQ transport"),
                          StartsWith("log_level_logfile: ignored: halite-master has one log")));
  EXPECT_THAT(ParseOk("fileserver_backend: [roots, git]\nhash_type: md5\n").warnings,
              ElementsAre(StartsWith("fileserver_backend: not supported"),
                          StartsWith("hash_type: not supported: file hashes")));
}

// Every setting of a stock Salt master is known: read, or said ignored / not supported. Set to
// null, none of them warns (a Salt key missing from the table would be "unknown key").
TEST(MasterConfigTest, EverySaltMasterSettingIsKnown) {
  std::ifstream in(HALITE_TEST_DATA_DIR "/vectors/salt_master_keys.txt");
  ASSERT_TRUE(in) << "tests/data/vectors/salt_master_keys.txt";
  std::string yaml;
  std::size_t keys = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    yaml += line + ":\n";
    ++keys;
  }
  ASSERT_GT(keys, 300u);
  const Loaded<MasterConfig> loaded = ParseOk(yaml);
  EXPECT_THAT(loaded.warnings, IsEmpty());
}

TEST(MasterConfigTest, TabIndentationIsInvalidWithLineNumber) {
  const Error error = ParseError("id: m1\nfile_roots:\n\tbase: [/srv/salt]\n");
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.message, StartsWith("line 3, "));
  EXPECT_THAT(error.message, HasSubstr("indented with a tab"));
  EXPECT_THAT(ParseError("file_roots:\n  base: []\n\tdev: []\n").message,
              AllOf(StartsWith("line 3, "), HasSubstr("tab")));
}

TEST(MasterConfigTest, UnclosedBracketIsInvalidWithLineNumber) {
  const Error error = ParseError("id: m1\ncluster_peers: [10.0.0.2, 10.0.0.3\nret_port: 4506\n");
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.message, AllOf(StartsWith("line 3,"), HasSubstr("end of sequence")));
}

TEST(MasterConfigTest, MalformedFileErrorNamesTheFile) {
  TempDir dir;
  const std::filesystem::path path = dir.Write("master", "a: {b: 1\n");
  Result<Loaded<MasterConfig>> loaded = LoadMasterConfig(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(loaded.error().message, StartsWith(path.string() + ": line 2, column 1: "));
}

TEST(MasterConfigTest, WrongTypesAreReported) {
  const Error error = ParseError(R"(
worker_threads: [1, 2]
publish_port: abc
auto_accept: maybe
sign_pub_messages: "false"
interface: {a: 1}
file_roots: [/srv/salt]
pillar_roots:
  base: /srv/pillar
cluster_peers:
  - 10.0.0.2
  - {x: 1}
job_cache: [a]
keep_jobs_seconds: 1.5
)");
  EXPECT_THAT(Lines(error.message),
              ElementsAre("worker_threads: expected an integer (got a list)",
                          "publish_port: expected an integer (got 'abc')",
                          "auto_accept: expected true or false (got 'maybe')",
                          "sign_pub_messages: expected true or false without quotes (got 'false')",
                          "interface: expected a string (got a map)",
                          "file_roots: expected a map of name: [list] (got a list)",
                          "pillar_roots.base: expected a list of strings (got '/srv/pillar')",
                          "cluster_peers[1]: expected a string (got a map)",
                          "job_cache: expected a map (got a list)",
                          "keep_jobs_seconds: expected a whole number of seconds (got '1.5')"))
      << error.message;
}

TEST(MasterConfigTest, TopLevelMustBeAMap) {
  EXPECT_EQ(ParseError("- a\n- b\n").message,
            "(top level): expected a map of settings (got a list)");
  EXPECT_EQ(ParseError("just words\n").message,
            "(top level): expected a map of settings (got 'just words')");
}

TEST(MasterConfigTest, KeySetTwiceIsInvalid) {
  EXPECT_EQ(ParseError("ret_port: 1\nid: x\nret_port: 2\n").message,
            "ret_port: set more than once (lines 1 and 3)");
}

TEST(MasterConfigTest, NullValueKeepsTheDefault) {
  const Loaded<MasterConfig> loaded = ParseOk("publish_port:\ncluster_id: ~\nfile_roots:\n");
  EXPECT_EQ(loaded.config.publish_port, 4505);
  EXPECT_EQ(loaded.config.cluster_id, "");
  EXPECT_EQ(loaded.config.file_roots.at("base"), std::vector<std::string>{"/srv/salt"});
  EXPECT_THAT(loaded.warnings, IsEmpty());
}

TEST(MasterConfigTest, QuotedNumbersAndHexAreIntegers) {
  const MasterConfig c = ParseOk("publish_port: '5505'\nret_port: 0x1000\n").config;
  EXPECT_EQ(c.publish_port, 5505);
  EXPECT_EQ(c.ret_port, 4096);
}

TEST(MasterConfigTest, EmptyIdMeansDefaultAsInSalt) {
  EXPECT_EQ(ParseOk("id: ''\n").config.id, DefaultId());
}

TEST(MasterConfigTest, InvalidIdsAreRejected) {
  EXPECT_EQ(ParseError("id: a/b\n").message, "id: must not contain '/', '\\' or NUL (got 'a/b')");
  EXPECT_EQ(ParseError("id: 'a\\b'\n").message,
            "id: must not contain '/', '\\' or NUL (got 'a\\b')");
  EXPECT_THAT(ParseError("id: \"a\\0b\"\n").message, StartsWith("id: must not contain"));
  EXPECT_EQ(ParseError("id: ..\n").message, "id: must not be '.' or '..' (got '..')");
}

TEST(MasterConfigTest, InterfaceMustBeAnIpLiteral) {
  EXPECT_EQ(ParseOk("interface: 10.1.2.3\n").config.interface, "10.1.2.3");
  EXPECT_EQ(ParseOk("interface: 'fd00::1'\nipv6: true\n").config.interface, "fd00::1");
  EXPECT_EQ(ParseError("interface: '::'\n").message,
            "interface: an IPv6 address needs ipv6: true (got '::')");
  EXPECT_THAT(ParseError("interface: '[::]'\nipv6: true\n").message,
              StartsWith("interface: must be an IP address (IPv6 without brackets)"));
  EXPECT_THAT(ParseError("interface: 10.1.2\n").message, StartsWith("interface: must be an IP"));
}

TEST(MasterConfigTest, ListeningPortsMustDiffer) {
  EXPECT_EQ(ParseError("publish_port: 4506\n").message,
            "ret_port: must differ from publish_port (got 4506)");
  EXPECT_EQ(ParseError("health_port: 4505\n").message,
            "health_port: must differ from publish_port (got 4505)");
  EXPECT_EQ(ParseError("cluster_id: c\ncluster_pool_port: 4510\n").message,
            "cluster_pool_port: must differ from health_port (got 4510)");
  // The pool port is not bound outside a cluster; health_port 0 is off.
  EXPECT_TRUE(ParseMasterConfig("cluster_pool_port: 4506\nhealth_port: 0\n").ok());
  // A port that is already invalid is not compared again.
  EXPECT_EQ(ParseError("publish_port: x\nret_port: 4505\n").message,
            "publish_port: expected an integer (got 'x')");
}

TEST(MasterConfigTest, ClusterPkiDirFallsBackToPkiDirWithWarning) {
  const Loaded<MasterConfig> loaded =
      ParseOk("cluster_id: prod\nroot_dir: /r\ncluster_peers: [10.0.0.2]\n");
  EXPECT_EQ(loaded.config.cluster_pki_dir, "/r/etc/salt/pki/master");
  EXPECT_THAT(loaded.warnings, ElementsAre(HasSubstr("cluster_pki_dir: not set; using pki_dir")));
}

TEST(MasterConfigTest, ClusterPeersAreOtherMastersOnly) {
  const Error error = ParseError(R"(
id: 10.0.0.1
cluster_id: prod
cluster_peers: [10.0.0.2, "", 10.0.0.1, 10.0.0.2]
cluster_pki_dir: /shared
)");
  EXPECT_THAT(Lines(error.message),
              ElementsAre("cluster_peers[1]: must not be empty",
                          "cluster_peers[2]: lists the other masters, not this one's id (got "
                          "'10.0.0.1')",
                          "cluster_peers[3]: listed twice (got '10.0.0.2')"));
}

TEST(MasterConfigTest, EtcdBackendIsParsedAndFilesIsTheDefault) {
  EXPECT_EQ(ParseOk("").config.cluster_backend, "files");
  EXPECT_EQ(ParseOk("").config.etcd_prefix, "/halite/");
  const MasterConfig c = ParseOk(R"(
id: m1
interface: 127.0.0.5
cluster_id: prod
cluster_backend: etcd
etcd_endpoints: [http://127.0.0.9:2379, "http://[::1]:2379"]
etcd_prefix: /prod/
cluster_pki_dir: /shared
)")
                             .config;
  EXPECT_EQ(c.cluster_backend, "etcd");
  EXPECT_THAT(c.etcd_endpoints, ElementsAre("http://127.0.0.9:2379", "http://[::1]:2379"));
  EXPECT_EQ(c.etcd_prefix, "/prod/");
}

TEST(MasterConfigTest, EtcdProblemsAreReportedTogether) {
  const Error error = ParseError(R"(
cluster_id: prod
cluster_backend: etcd
etcd_endpoints: [https://127.0.0.9:2379, http://etcd.example.com:2379, http://127.0.0.9, 127.0.0.9:2379]
etcd_prefix: halite
etcd_cert: /etc/halite/etcd.crt
)");
  EXPECT_THAT(
      Lines(error.message),
      ElementsAre(
          "etcd_endpoints[1]: the host must be an IP address (halite never resolves names) (got "
          "'http://etcd.example.com:2379')",
          "etcd_endpoints[2]: needs a port (http://IP:2379) (got 'http://127.0.0.9')",
          "etcd_endpoints[3]: must start with http:// or https:// (got '127.0.0.9:2379')",
          "etcd_endpoints: mixes http:// and https:// (use TLS for all or none)",
          "etcd_prefix: must start and end with '/' (got 'halite')",
          // Not in the document: after the keys that are, in the order of the lines.
          "interface: cluster_backend: etcd needs the address peers reach this master at (it "
          "goes into the member record), not '0.0.0.0'",
          "etcd_key: etcd_cert and etcd_key go together (the client's certificate and its key)"))
      << error.message;
  // TLS files with plain endpoints would send keys in the clear: refused.
  EXPECT_THAT(Lines(ParseError("id: m1\ninterface: 127.0.0.5\ncluster_id: p\ncluster_backend: "
                               "etcd\netcd_endpoints: [http://127.0.0.9:2379]\netcd_cacert: "
                               "/etc/halite/ca.pem\n")
                        .message),
              ElementsAre("etcd_endpoints: etcd TLS files are set but the endpoints are http://: "
                          "use https:// endpoints"));
  const MasterConfig tls = ParseOk(R"(
id: m1
interface: 127.0.0.5
cluster_id: prod
cluster_backend: etcd
etcd_endpoints: [https://127.0.0.9:2379, https://127.0.0.10:2379]
etcd_cacert: /etc/halite/etcd-ca.pem
etcd_cert: /etc/halite/etcd-client.pem
etcd_key: /etc/halite/etcd-client.key
)")
                               .config;
  EXPECT_EQ(tls.etcd_cacert, "/etc/halite/etcd-ca.pem");
  EXPECT_EQ(tls.etcd_cert, "/etc/halite/etcd-client.pem");
  EXPECT_EQ(tls.etcd_key, "/etc/halite/etcd-client.key");
  EXPECT_THAT(Lines(ParseError("cluster_backend: zookeeper\n").message),
              ElementsAre("cluster_backend: must be files or etcd (got 'zookeeper')"));
  EXPECT_THAT(Lines(ParseError("interface: 127.0.0.5\ncluster_backend: etcd\n").message),
              ElementsAre("cluster_backend: etcd needs cluster_id",
                          "etcd_endpoints: cluster_backend: etcd needs at least one endpoint"));
}

TEST(MasterConfigTest, ClusterKeysWithoutClusterIdWarn) {
  const Loaded<MasterConfig> loaded = ParseOk("cluster_peers: [10.0.0.2]\ncluster_pki_dir: /s\n");
  EXPECT_THAT(loaded.warnings,
              ElementsAre("cluster_peers: ignored because cluster_id is not set",
                          "cluster_pki_dir: ignored because cluster_id is not set"));
}

TEST(MasterConfigTest, RootsMustBeAbsolute) {
  EXPECT_EQ(ParseError("file_roots:\n  base: [/srv/salt, srv/more]\n").message,
            "file_roots.base[1]: must be an absolute path (got 'srv/more')");
  const MasterConfig c = ParseOk("pillar_roots:\n  base:\n").config;
  EXPECT_THAT(c.pillar_roots.at("base"), IsEmpty());
}

TEST(MasterConfigTest, WeakKeysizeWarnsAndOutOfRangeFails) {
  EXPECT_THAT(ParseOk("keysize: 1024\n").warnings, ElementsAre(HasSubstr("keysize: 1024-bit")));
  EXPECT_EQ(ParseError("keysize: 512\n").message,
            "keysize: must be between 1024 and 16384 (got 512)");
}

TEST(MasterConfigTest, RangesOfOwnKeys) {
  EXPECT_THAT(Lines(ParseError(R"(
max_request_bytes: 10
return_batch_max: 0
return_fsync_interval_ms: -1
health_port: 65536
keep_jobs_seconds: -5
loop_interval: 0
)")
                        .message),
              ElementsAre("max_request_bytes: must be between 1024 and 4294967296 (got 10)",
                          "return_batch_max: must be between 1 and 1000000 (got 0)",
                          "return_fsync_interval_ms: must be between 0 and 60000 milliseconds "
                          "(got -1)",
                          "health_port: must be between 0 and 65535 (got 65536)",
                          "keep_jobs_seconds: must be between 0 and 316224000 seconds (got -5)",
                          "loop_interval: must be between 1 and 316224000 seconds (got 0)"));
}

TEST(MasterConfigTest, MissingFileIsNotFound) {
  TempDir dir;
  Result<Loaded<MasterConfig>> loaded = LoadMasterConfig(dir.path() / "no-such-master");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, ErrorCode::kNotFound);
}

TEST(MasterConfigTest, DirectoryIsNotAConfigFile) {
  TempDir dir;
  Result<Loaded<MasterConfig>> loaded = LoadMasterConfig(dir.path());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, ErrorCode::kInvalidArgument);
}

TEST(MasterConfigTest, ExampleConfigLoadsCleanly) {
  Result<Loaded<MasterConfig>> loaded =
      LoadMasterConfig(HALITE_TEST_DATA_DIR "/../../conf/master.example");
  ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
  EXPECT_THAT(loaded->warnings, IsEmpty());
  EXPECT_EQ(loaded->config.id, "master-1");
}

TEST(MasterConfigTest, DefaultIdComesFromTheHostnameFile) {
  TempDir dir;
  EXPECT_EQ(DefaultIdFrom(dir.Write("hostname", "  box-7.lan \nsecond\n")), "box-7.lan");
  EXPECT_EQ(DefaultIdFrom(dir.Write("empty", "\n")), "localhost");
  EXPECT_EQ(DefaultIdFrom(dir.path() / "missing"), "localhost");
  EXPECT_THAT(DefaultId(), Not(IsEmpty()));
}

TEST(MasterConfigTest, ExitCodeIsExConfig) { EXPECT_EQ(kExitConfig, 78); }

}  // namespace
}  // namespace halite::config
