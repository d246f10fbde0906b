// halite-api with pam eauth over TLS, driven by Debian's salt-pepper (an independent
// salt-api client) and curl. The test makes what PAM needs and removes it afterwards: a
// local user with a password (useradd, chpasswd) in a group of its own, and a PAM service
// file /etc/pam.d/halite-api-test-<pid> with pam_unix only (so no site policy such as
// pam_nologin or pam_faildelay of /etc/pam.d/login gets in the way). That needs root, as the
// GlusterFS tests do; without it the suite fails saying so.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "http_client.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

constexpr int kApiPort = 8000;

struct PamServers {
  TempDir tmp;
  std::string ip = UniqueLoopbackIp();
  std::string user = "hapi" + std::to_string(::getpid() % 1000000);
  std::string group = user + "g";
  std::string password = "Pw-" + std::to_string(::getpid());
  std::string service = "halite-api-test-" + std::to_string(::getpid());
  std::filesystem::path pam_file = std::filesystem::path("/etc/pam.d") / service;
  std::unique_ptr<MasterUnderTest> master;
  std::unique_ptr<MinionUnderTest> minion;
  std::unique_ptr<Process> api;
  bool made_user = false;

  static void MustRun(const std::vector<std::string>& argv, const std::string& input = "") {
    CommandResult r;
    if (input.empty()) {
      r = Run(argv);
    } else {
      r = Run({"/bin/sh", "-c", "printf '%s\\n' \"$0\" | " + argv[0] + " " + argv[1], input});
    }
    if (r.exit_code != 0) throw std::runtime_error(argv[0] + " failed: " + r.err);
  }

  PamServers() {
    if (::geteuid() != 0) {
      throw std::runtime_error("the pam tests need root: they create a user and a PAM service");
    }
    MustRun({"/usr/sbin/groupadd", group});
    MustRun({"/usr/sbin/useradd", "-M", "-N", "-g", group, "-s", "/usr/sbin/nologin", user});
    made_user = true;
    MustRun({"/usr/sbin/chpasswd", ""}, user + ":" + password);
    WriteFile(pam_file, "auth required pam_unix.so\naccount required pam_unix.so\n");
    const auto crt = tmp.path() / "api.crt";
    const auto key = tmp.path() / "api.key";
    MustRun({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-subj", "/CN=" + ip, "-addext", "subjectAltName=IP:" + ip, "-keyout", key.string(),
             "-out", crt.string()});
    MasterSpec spec;
    spec.ip = ip;
    spec.auto_accept = true;
    spec.extra_yaml =
        "netapi_enable_clients: [local, local_async, runner, wheel]\n"
        "auth.pam.service: " +
        service +
        "\n"
        "external_auth:\n"
        "  pam:\n"
        "    " +
        user +
        ": ['test.*', '@runner', '@wheel']\n"
        "    " +
        group +
        "%: ['grains.*']\n"
        "rest_cherrypy:\n"
        "  host: " +
        ip +
        "\n"
        "  port: " +
        std::to_string(kApiPort) +
        "\n"
        "  ssl_crt: " +
        crt.string() +
        "\n"
        "  ssl_key: " +
        key.string() +
        "\n"
        "  halite_rate_limit_per_second: 1\n"
        "  halite_rate_limit_burst: 60\n";
    master = std::make_unique<MasterUnderTest>(tmp.path(), spec);
    master->Start();
    MinionSpec m;
    m.id = "web1";
    m.master_ip = ip;
    minion = std::make_unique<MinionUnderTest>(tmp.path(), m);
    minion->Start();
    api = StartHaliteApi(master->config(), tmp.path() / "api.log", [&] {
      return Run({"/usr/bin/curl", "-sk", "-o", "/dev/null", "https://" + ip + ":8000/"}, 5s)
                 .exit_code == 0;
    });
    std::string last;
    if (!EveryMinionAnswers(*master, "*", {"test.ping"}, 1, &last)) {
      throw std::runtime_error("web1 did not answer: " + last);
    }
  }

  ~PamServers() {
    api.reset();
    std::error_code ec;
    std::filesystem::remove(pam_file, ec);
    if (made_user) (void)Run({"/usr/sbin/userdel", user});
    (void)Run({"/usr/sbin/groupdel", group});
  }

  // salt-pepper against https://ip:8000 with the test user's credentials (pam).
  CommandResult Pepper(const std::vector<std::string>& args, const std::string& pass = "") {
    std::vector<std::string> argv{"/usr/bin/env",
                                  "HOME=" + tmp.path().string(),
                                  "SALTAPI_URL=https://" + ip + ":8000",
                                  "SALTAPI_USER=" + user,
                                  "SALTAPI_PASS=" + (pass.empty() ? password : pass),
                                  "SALTAPI_EAUTH=pam",
                                  "/usr/bin/salt-pepper",
                                  "--ignore-ssl-errors"};
    argv.insert(argv.end(), args.begin(), args.end());
    return Run(argv, 60s);
  }

  CommandResult Curl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/curl", "-sk", "-w", "\n%{http_code}"};
    argv.insert(argv.end(), args.begin(), args.end());
    return Run(argv, 30s);
  }
};

class ApiPamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { servers_ = new PamServers(); }
  static void TearDownTestSuite() {
    delete servers_;
    servers_ = nullptr;
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << "halite-api log:\n" << servers_->api->Log() << std::endl;
  }
  static PamServers* servers_;
};

PamServers* ApiPamTest::servers_ = nullptr;

// The last line of curl -w "\n%{http_code}" output.
int Code(const CommandResult& r) {
  auto nl = r.out.rfind('\n');
  return std::atoi(r.out.c_str() + (nl == std::string::npos ? 0 : nl + 1));
}

TEST_F(ApiPamTest, PepperRunsTestPingARunnerAndAWheelCall) {
  auto ping = servers_->Pepper({"*", "test.ping"});
  ASSERT_EQ(ping.exit_code, 0) << ping.out << ping.err;
  Json j = Json::parse(ping.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << ping.out;
  EXPECT_EQ(j["return"][0]["web1"], true) << ping.out;
  auto runner = servers_->Pepper({"--client=runner", "jobs.list_jobs"});
  ASSERT_EQ(runner.exit_code, 0) << runner.out << runner.err;
  Json r = Json::parse(runner.out, nullptr, false);
  ASSERT_TRUE(r["return"][0].is_object()) << runner.out;
  bool found = false;
  for (auto& [jid, job] : r["return"][0].items()) {
    found = found || (job["Function"] == "test.ping" && job["User"] == servers_->user);
  }
  EXPECT_TRUE(found) << "no test.ping by " << servers_->user << " in " << runner.out;
  auto wheel = servers_->Pepper({"--client=wheel", "key.list_all"});
  ASSERT_EQ(wheel.exit_code, 0) << wheel.out << wheel.err;
  Json w = Json::parse(wheel.out, nullptr, false);
  EXPECT_EQ(w["return"][0]["data"]["return"]["minions"], Json::array({"web1"})) << wheel.out;
}

TEST_F(ApiPamTest, TheAclRefusesCmdRunAndAWrongPasswordIsRefused) {
  auto run = servers_->Pepper({"*", "cmd.run", "id"});
  EXPECT_NE(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(run.out.find("uid="), std::string::npos) << run.out;
  auto curl = servers_->Curl(
      {"-H", "Content-Type: application/json", "-d",
       Json{{"username", servers_->user}, {"password", servers_->password}, {"eauth", "pam"}}
           .dump(),
       "https://" + servers_->ip + ":8000/login"});
  ASSERT_EQ(Code(curl), 200) << curl.out;
  Json login = Json::parse(curl.out.substr(0, curl.out.rfind('\n')));
  const std::string token = login["return"][0]["token"];
  // The group entry (getgrouplist) is in the perms and lets grains.* through.
  EXPECT_EQ(login["return"][0]["perms"],
            Json::parse(R"(["@runner", "@wheel", "grains.*", "test.*"])"));
  auto grains =
      servers_->Curl({"-H", "X-Auth-Token: " + token, "-H", "Content-Type: application/json", "-d",
                      R"([{"client": "local", "tgt": "*", "fun": "grains.item", "arg": ["id"]}])",
                      "https://" + servers_->ip + ":8000/"});
  EXPECT_EQ(Code(grains), 200) << grains.out;
  auto denied =
      servers_->Curl({"-H", "X-Auth-Token: " + token, "-H", "Content-Type: application/json", "-d",
                      R"([{"client": "local", "tgt": "*", "fun": "cmd.run", "arg": ["id"]}])",
                      "https://" + servers_->ip + ":8000/"});
  EXPECT_EQ(Code(denied), 401) << denied.out;
  auto wrong = servers_->Curl({"-d", "username=" + servers_->user, "-d", "password=nope", "-d",
                               "eauth=pam", "https://" + servers_->ip + ":8000/login"});
  EXPECT_EQ(Code(wrong), 401) << wrong.out;
}

TEST_F(ApiPamTest, PlainHttpIsNotServedOnTheTlsPort) {
  auto r = HttpCall(servers_->ip, kApiPort, "GET", "/", {}, "", 5s);
  EXPECT_NE(r.status, 200);
}

// Last: it spends the address's requests (burst 60, then 1 a second).
TEST_F(ApiPamTest, RequestsBeyondTheRateLimitAre429) {
  // 120 requests from one curl over one kept-alive TLS connection: a curl process and a
  // handshake per request took longer than the 1 s refill on a loaded machine, so the bucket
  // never ran dry. They come from a source address nothing else used (the readiness probe
  // and the other tests spent tokens from 127.0.0.1, so its bucket was not always full): the
  // first 60 (the burst) are answered; later ones are refused.
  const std::string source = servers_->ip.substr(0, servers_->ip.rfind('.')) + ".201";
  std::vector<std::string> args{"--interface", source, "-w", "\n%{http_code}\n"};
  args.insert(args.end(), 120, "https://" + servers_->ip + ":8000/");
  auto r = servers_->Curl(args);
  int answered = 0;
  int limited = 0;
  std::istringstream out(r.out);
  for (std::string line; std::getline(out, line);) {
    if (line == "200") ++answered;
    if (line == "429") ++limited;
  }
  EXPECT_GE(answered, 60) << r.out.substr(0, 400);
  EXPECT_GT(limited, 0) << r.out.substr(0, 400);
  EXPECT_EQ(answered + limited, 120) << r.out.substr(0, 400);
}

}  // namespace
}  // namespace halite::testing
