#include "halite/config/minion_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace halite::config {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return lines;
    start = end + 1;
  }
}

Loaded<MinionConfig> ParseOk(std::string_view yaml) {
  Result<Loaded<MinionConfig>> loaded = ParseMinionConfig(yaml);
  EXPECT_TRUE(loaded.ok()) << loaded.error().ToString();
  return loaded.ok() ? std::move(loaded).value() : Loaded<MinionConfig>{};
}

Error ParseError(std::string_view yaml) {
  Result<Loaded<MinionConfig>> loaded = ParseMinionConfig(yaml);
  EXPECT_FALSE(loaded.ok());
  return loaded.ok() ? Error::Internal("parsed") : std::move(loaded).error();
}

TEST(MinionConfigTest, EmptyDocumentGivesSaltDefaults) {
  const Loaded<MinionConfig> loaded = ParseOk("");
  const MinionConfig& c = loaded.config;
  EXPECT_THAT(loaded.warnings, ElementsAre(StartsWith("master: not set; Salt's default 'salt'")));
  EXPECT_EQ(c.id, DefaultId());
  EXPECT_THAT(c.master, ElementsAre("salt"));
  EXPECT_EQ(c.master_port, 4506);
  EXPECT_EQ(c.publish_port, 4505);
  EXPECT_EQ(c.root_dir, "");
  EXPECT_EQ(c.pki_dir, "/etc/salt/pki/minion");
  EXPECT_EQ(c.cachedir, "/var/cache/salt/minion");
  EXPECT_EQ(c.sock_dir, "/var/run/salt/minion");
  EXPECT_EQ(c.log_file, "");
  EXPECT_EQ(c.log_level, "warning");
  EXPECT_EQ(c.user, "root");
  EXPECT_EQ(c.acceptance_wait_time, std::chrono::seconds(10));
  EXPECT_EQ(c.acceptance_wait_time_max, std::chrono::seconds(0));
  EXPECT_EQ(c.auth_timeout, std::chrono::seconds(5));
  EXPECT_EQ(c.auth_tries, 7);
  EXPECT_EQ(c.request_channel_timeout, std::chrono::seconds(60));
  EXPECT_EQ(c.request_channel_tries, 3);
  EXPECT_EQ(c.return_retry_timer, std::chrono::seconds(5));
  EXPECT_EQ(c.return_retry_timer_max, std::chrono::seconds(10));
  EXPECT_EQ(c.return_retry_tries, 3);
  EXPECT_FALSE(c.rejected_retry);
  EXPECT_EQ(c.recon_default, std::chrono::milliseconds(1000));
  EXPECT_EQ(c.recon_max, std::chrono::milliseconds(10000));
  EXPECT_TRUE(c.recon_randomize);
  EXPECT_EQ(c.keysize, 2048);
  EXPECT_EQ(c.encryption_algorithm, "OAEP-SHA1");
  EXPECT_EQ(c.signing_algorithm, "PKCS1v15-SHA1");
  EXPECT_FALSE(c.sign_pub_messages);
  EXPECT_TRUE(c.grains.IsMap());
  EXPECT_EQ(c.grains.size(), 0u);
  EXPECT_FALSE(c.ipv6);
  EXPECT_EQ(c.request_protocol_version, 3);
  EXPECT_EQ(c.job_timeout, std::chrono::seconds(0));
  EXPECT_EQ(c.exec_workers, 4);
}

TEST(MinionConfigTest, EveryFieldIsParsed) {
  const Loaded<MinionConfig> loaded = ParseOk(R"(
id: web-1
master: [10.0.0.1, "10.0.0.2:5506", "[fd00::3]:4506"]
master_port: 5506
publish_port: 5505
pki_dir: /m/pki
cachedir: /m/cache
sock_dir: /m/sock
log_file: /m/minion.log
log_level: info
user: salt
acceptance_wait_time: 2
acceptance_wait_time_max: 30
auth_timeout: 3
auth_tries: 2
request_channel_timeout: 20
request_channel_tries: 5
return_retry_timer: 1
return_retry_timer_max: 4
return_retry_tries: 9
rejected_retry: true
recon_default: 100
recon_max: 500
recon_randomize: false
keysize: 3072
encryption_algorithm: OAEP-SHA224
signing_algorithm: PKCS1v15-SHA224
sign_pub_messages: true
grains:
  roles: [web, db]
  rack: 7
ipv6: true
request_protocol_version: 2
job_timeout: 600
exec_workers: 8
)");
  const MinionConfig& c = loaded.config;
  EXPECT_THAT(loaded.warnings, IsEmpty());
  EXPECT_EQ(c.id, "web-1");
  EXPECT_THAT(c.master, ElementsAre("10.0.0.1", "10.0.0.2:5506", "[fd00::3]:4506"));
  EXPECT_EQ(c.master_port, 5506);
  EXPECT_EQ(c.publish_port, 5505);
  EXPECT_EQ(c.pki_dir, "/m/pki");
  EXPECT_EQ(c.cachedir, "/m/cache");
  EXPECT_EQ(c.sock_dir, "/m/sock");
  EXPECT_EQ(c.log_file, "/m/minion.log");
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.user, "salt");
  EXPECT_EQ(c.acceptance_wait_time, std::chrono::seconds(2));
  EXPECT_EQ(c.acceptance_wait_time_max, std::chrono::seconds(30));
  EXPECT_EQ(c.auth_timeout, std::chrono::seconds(3));
  EXPECT_EQ(c.auth_tries, 2);
  EXPECT_EQ(c.request_channel_timeout, std::chrono::seconds(20));
  EXPECT_EQ(c.request_channel_tries, 5);
  EXPECT_EQ(c.return_retry_timer, std::chrono::seconds(1));
  EXPECT_EQ(c.return_retry_timer_max, std::chrono::seconds(4));
  EXPECT_EQ(c.return_retry_tries, 9);
  EXPECT_TRUE(c.rejected_retry);
  EXPECT_EQ(c.recon_default, std::chrono::milliseconds(100));
  EXPECT_EQ(c.recon_max, std::chrono::milliseconds(500));
  EXPECT_FALSE(c.recon_randomize);
  EXPECT_EQ(c.keysize, 3072);
  EXPECT_EQ(c.encryption_algorithm, "OAEP-SHA224");
  EXPECT_EQ(c.signing_algorithm, "PKCS1v15-SHA224");
  EXPECT_TRUE(c.sign_pub_messages);
  ASSERT_TRUE(c.grains.IsMap());
  EXPECT_EQ(c.grains["roles"][1].as<std::string>(), "db");
  EXPECT_EQ(c.grains["rack"].as<int>(), 7);
  EXPECT_TRUE(c.ipv6);
  EXPECT_EQ(c.request_protocol_version, 2);
  EXPECT_EQ(c.job_timeout, std::chrono::seconds(600));
  EXPECT_EQ(c.exec_workers, 8);
}

TEST(MinionConfigTest, MasterMayBeASingleString) {
  const Loaded<MinionConfig> loaded = ParseOk("master: 192.168.1.10\n");
  EXPECT_THAT(loaded.config.master, ElementsAre("192.168.1.10"));
  EXPECT_THAT(loaded.warnings, IsEmpty());
}

TEST(MinionConfigTest, MasterHostNamesAreRejectedBecauseHaliteNeverResolves) {
  EXPECT_THAT(
      ParseError("master: salt.example.com\n").message,
      AllOf(StartsWith("master: must be an IP address"),
            HasSubstr("halite never resolves host names"), HasSubstr("(got 'salt.example.com')")));
  EXPECT_THAT(Lines(ParseError("master: [10.0.0.1, salt, '10.0.0.2:0', []]\n").message),
              ElementsAre("master[3]: expected a string (got a list)"));
  EXPECT_THAT(Lines(ParseError("master: [10.0.0.1, salt, '10.0.0.2:0']\n").message),
              ElementsAre(StartsWith("master[1]: must be an IP address"),
                          "master[2]: port must be between 1 and 65535 (got '10.0.0.2:0')"));
  EXPECT_EQ(ParseError("master: []\n").message, "master: must list at least one master");
}

TEST(MinionConfigTest, ParseMasterAddressAcceptsIpLiteralsWithOptionalPort) {
  struct Case {
    std::string_view entry;
    std::string host;
    std::uint16_t port;
  };
  for (const Case& c : {Case{"10.0.0.1", "10.0.0.1", 4506}, Case{"10.0.0.1:5000", "10.0.0.1", 5000},
                        Case{"::1", "::1", 4506}, Case{"[::1]", "::1", 4506},
                        Case{"[fd00::1]:4600", "fd00::1", 4600}}) {
    SCOPED_TRACE(c.entry);
    Result<MasterAddress> address = ParseMasterAddress(c.entry, 4506);
    ASSERT_TRUE(address.ok()) << address.error().ToString();
    EXPECT_EQ(address->host, c.host);
    EXPECT_EQ(address->port, c.port);
  }
  for (std::string_view bad : {"", "salt", "salt:4506", "10.0.0.1:", "10.0.0.1:65536", "10.0.0.1:x",
                               "[::1]x", "[::1", "[10.0.0.1]:4506", "fd00::1:4506:x"}) {
    SCOPED_TRACE(bad);
    Result<MasterAddress> address = ParseMasterAddress(bad, 4506);
    ASSERT_FALSE(address.ok());
    EXPECT_EQ(address.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST(MinionConfigTest, RootDirIsPrefixedToLocalPaths) {
  const MinionConfig c = ParseOk("master: 10.0.0.1\nroot_dir: /tmp/m\nlog_file: /log\n").config;
  EXPECT_EQ(c.pki_dir, "/tmp/m/etc/salt/pki/minion");
  EXPECT_EQ(c.cachedir, "/tmp/m/var/cache/salt/minion");
  EXPECT_EQ(c.sock_dir, "/tmp/m/var/run/salt/minion");
  EXPECT_EQ(c.log_file, "/tmp/m/log");
}

TEST(MinionConfigTest, FiveInvalidValuesAreReportedTogether) {
  const Error error = ParseError(R"(
master: 10.0.0.1
master_port: 99999
auth_tries: 0
encryption_algorithm: RSA-PSS
request_protocol_version: 1
cachedir: var/cache
)");
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(Lines(error.message),
              ElementsAre("master_port: must be between 1 and 65535 (got 99999)",
                          "auth_tries: must be at least 1 (got 0)",
                          "encryption_algorithm: must be one of OAEP-SHA1, OAEP-SHA224 (got "
                          "'RSA-PSS')",
                          "request_protocol_version: must be between 2 and 3 (got 1)",
                          "cachedir: must be an absolute path (got 'var/cache')"))
      << error.message;
}

TEST(MinionConfigTest, UnknownKeysAreWarningsNotErrors) {
  const Loaded<MinionConfig> loaded = ParseOk("master: 10.0.0.1\nmine_interval: 60\n");
  EXPECT_THAT(loaded.warnings, ElementsAre("unknown key 'mine_interval' (ignored)"));
}

TEST(MinionConfigTest, MalformedYamlIsInvalidWithLineNumber) {
  EXPECT_THAT(ParseError("master: 10.0.0.1\ngrains:\n  a: 1\n\tb: 2\n").message,
              StartsWith("line 4, column 1: "));
  EXPECT_THAT(ParseError("master: [10.0.0.1\n").message, StartsWith("line 2,"));
}

TEST(MinionConfigTest, WrongTypesAreReported) {
  EXPECT_THAT(Lines(ParseError(R"(
master: {a: 1}
auth_timeout: [5]
publish_port: abc
grains: [a, b]
rejected_retry: 2
)")
                        .message),
              ElementsAre("master: expected a list of strings (got a map)",
                          "auth_timeout: expected a whole number of seconds (got a list)",
                          "publish_port: expected an integer (got 'abc')",
                          "grains: expected a map (got a list)",
                          "rejected_retry: expected true or false (got '2')"));
}

TEST(MinionConfigTest, RetryMaximaMustNotBeBelowTheirBase) {
  EXPECT_THAT(
      Lines(ParseError("master: 10.0.0.1\nreturn_retry_timer: 8\nreturn_retry_timer_max: 4\n"
                       "acceptance_wait_time: 20\nacceptance_wait_time_max: 15\n")
                .message),
      ElementsAre("return_retry_timer_max: must be 0 or at least return_retry_timer (8) "
                  "(got 4)",
                  "acceptance_wait_time_max: must be 0 or at least acceptance_wait_time "
                  "(20) (got 15)"));
  EXPECT_TRUE(ParseMinionConfig("master: 10.0.0.1\nreturn_retry_timer_max: 0\n").ok());
}

TEST(MinionConfigTest, MissingFileIsNotFound) {
  Result<Loaded<MinionConfig>> loaded =
      LoadMinionConfig(std::filesystem::path(testing::TempDir()) / "halite-no-such-dir" / "minion");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, ErrorCode::kNotFound);
}

TEST(MinionConfigTest, ExampleConfigLoadsCleanly) {
  Result<Loaded<MinionConfig>> loaded =
      LoadMinionConfig(HALITE_TEST_DATA_DIR "/../../conf/minion.example");
  ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
  EXPECT_THAT(loaded->warnings, IsEmpty());
  EXPECT_THAT(loaded->config.master, ElementsAre("127.0.0.1"));
  EXPECT_TRUE(loaded->config.grains["roles"].IsSequence());
}

}  // namespace
}  // namespace halite::config
