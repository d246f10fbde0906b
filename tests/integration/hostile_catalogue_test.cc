// The hostile-input catalogue (issue 12, item 11): distinct bad inputs against one real master,
// each answered with a clear error or a counted drop, while a real halite-minion keeps being
// served and the master's peak memory stays bounded.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zmq.hpp>

#include "hostile.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

// The catalogue: distinct bad inputs, each answered with a clear error or a counted drop, while
// a real halite-minion keeps answering jobs and the master's peak memory stays bounded.
TEST_F(HostileTest, CatalogueOfBadInputsLeavesTheMasterServing) {
  MasterUnderTest master(tmp_.path(), Spec(true, "max_request_bytes: 1048576\n"));
  master.Start();
  std::vector<std::unique_ptr<MinionUnderTest>> minions;
  StartMinion(tmp_.path(), "real1", master.ip(), minions);
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(master, "*", {"test.ping"}, 1, &last)) << last;
  const long hwm_before = StatusKib(master.pid(), "VmHWM");
  auto attacker = SignIn(ctx_, master, "attacker");
  auto other = SignIn(ctx_, master, "other");
  const std::string ep = RetEndpoint(master);

  struct Case {
    std::string name;
    std::string body;
  };
  auto env = [](wire::Value load, int version = 3, const char* enc = "clear") {
    return wire::Pack(
        wire::Value::MapOf({{"enc", enc}, {"load", std::move(load)}, {"version", version}}));
  };
  auto header = [](unsigned char tag, std::uint32_t n) {
    std::string s(1, static_cast<char>(tag));
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(n >> shift));
    return s;
  };
  auto auth_load = [](wire::Value id, wire::Value pub) {
    return wire::Value::MapOf({{"cmd", "_auth"},
                               {"id", std::move(id)},
                               {"pub", std::move(pub)},
                               {"nonce", wire::RandomNonce()}});
  };
  const std::string pem = attacker.minion->PublicPem();
  std::vector<Case> cases = {
      {"one invalid msgpack byte", std::string(1, static_cast<char>(0xc1))},
      {"truncated map", std::string("\x82\xa3"
                                    "enc",
                                    5)},
      {"trailing bytes", wire::Pack(wire::Value::EmptyMap()) + "xyz"},
      {"array32 declaring 4G elements", header(0xdd, 0xffffffffu)},
      {"map32 declaring 4G pairs", header(0xdf, 0xffffffffu)},
      {"str32 declaring 4 GB", header(0xdb, 0xffffffffu) + "abc"},
      {"nested 100k arrays", std::string(100000, static_cast<char>(0x91)) + "\xc0"},
      {"top level is an int", wire::Pack(wire::Value(42))},
      {"map without enc", wire::Pack(wire::Value::MapOf({{"load", wire::Value::EmptyMap()}}))},
      {"clear load is a list", env(wire::Value(wire::Array{1, 2}))},
      {"aes load is a map", env(wire::Value::EmptyMap(), 3, "aes")},
      {"unknown enc", env(wire::Value::EmptyMap(), 3, "rot13")},
      {"version is a string",
       wire::Pack(wire::Value::MapOf(
           {{"enc", "clear"}, {"load", wire::Value::EmptyMap()}, {"version", "x"}}))},
      {"version 1 (below minimum)", env(auth_load("v1", pem), 1)},
      {"auth without id", env(wire::Value::MapOf({{"cmd", "_auth"}, {"pub", pem}}))},
      {"auth id path traversal", env(auth_load("../../etc/passwd", pem))},
      {"auth id is an int", env(auth_load(7, pem))},
      {"auth pub is a map", env(auth_load("m", wire::Value::EmptyMap()))},
      {"auth pub is a private key", env(auth_load("priv", NewKey().ToPem()))},
      {"auth enc_algo bogus",
       env(wire::Value::MapOf(
           {{"cmd", "_auth"}, {"id", "x"}, {"pub", pem}, {"enc_algo", "ROT13"}}))},
      {"publish without the root key",
       env(wire::Value::MapOf({{"cmd", "publish"},
                               {"tgt", "*"},
                               {"fun", "cmd.run"},
                               {"arg", wire::Value(wire::Array{"id"})}}))},
      {"local command without key", env(wire::Value::MapOf({{"cmd", "_halite_list_jobs"}}))},
      {"aes ciphertext is random", env(wire::Value(std::string(256, 'r')), 2, "aes")},
      {"v3 from an unknown id",
       wire::Pack(
           wire::Value::MapOf({{"enc", "aes"}, {"load", "xx"}, {"version", 3}, {"id", "nobody"}}))},
      {"v3 envelope id differs from the load id",
       attacker.minion
           ->Encode(attacker.session, wire::Value::MapOf({{"cmd", "_master_opts"}}),
                    RawMinion::Forge{.envelope_id = "attacker", .load_id = "other"})
           .body},
      {"v3 tok signed by another key",
       attacker.minion
           ->Encode(attacker.session, wire::Value::MapOf({{"cmd", "_master_opts"}}),
                    RawMinion::Forge{.tok = other.minion->Tok()})
           .body},
      {"v3 without tok",
       attacker.minion
           ->Encode(attacker.session, wire::Value::MapOf({{"cmd", "_master_opts"}}),
                    RawMinion::Forge{.with_tok = false})
           .body},
      {"v3 under another minion's session key",
       attacker.minion->Encode(other.session, wire::Value::MapOf({{"cmd", "_master_opts"}}), {})
           .body},
      {"v2 unsigned return for another minion",
       attacker.minion
           ->Encode(attacker.aes, ReturnLoad("20250101000000000000", "x"),
                    RawMinion::Forge{.version = 2, .load_id = "other", .with_tok = false})
           .body},
      {"frame over max_request_bytes", std::string(2 << 20, 'z')},
  };
  int index = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto reply = RequestOnce(ctx_, ep, c.body, 15s);
    ASSERT_TRUE(reply.has_value()) << "no answer to case " << index << ": " << c.name;
    auto decoded = wire::Unpack(*reply);
    ASSERT_TRUE(decoded.ok()) << "undecodable answer";
    // A clear error: "bad load", an error map, ret false, or Salt's empty {} for unknown input.
    // Signed `_auth` replies carry their answer in the packed `load`.
    std::string json = decoded->ToJson();
    if (decoded->is_map() && decoded->Find("load")) {
      const std::string* inner_bytes = decoded->Find("load")->str();
      auto inner =
          inner_bytes ? wire::Unpack(*inner_bytes) : Result<wire::Value>(*decoded->Find("load"));
      ASSERT_TRUE(inner.ok());
      EXPECT_TRUE(inner->Find("aes") == nullptr) << inner->ToJson();
      json = inner->ToJson();
    }
    const bool clear_error = json == "\"bad load\"" || json.find("error") != std::string::npos ||
                             json.find("\"ret\": false") != std::string::npos || json == "{}" ||
                             json.find("must be a dict") != std::string::npos ||
                             json.find("bad enc algo") != std::string::npos;
    EXPECT_TRUE(clear_error) << json.substr(0, 300);
    ++index;
  }
  EXPECT_EQ(index, static_cast<int>(cases.size()));

  // More, over other channels: garbage multi-part frames on a DEALER (REQ framing broken).
  {
    zmq::socket_t dealer(ctx_, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect(ep);
    for (int i = 0; i < 100; ++i) {
      dealer.send(zmq::str_buffer("x"), zmq::send_flags::sndmore);
      dealer.send(zmq::str_buffer("\x92\x01"), zmq::send_flags::none);
    }
  }
  // Thousands of idle TCP connections on both ports and the health port.
  rlimit nofile{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &nofile), 0);
  nofile.rlim_cur = std::min<rlim_t>(nofile.rlim_max, 8192);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &nofile), 0);
  std::vector<int> fds;
  for (int port : {4506, 4505, kHostileHealthPort}) {
    for (int i = 0; i < 700; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<std::uint16_t>(port));
      ::inet_pton(AF_INET, master.ip().c_str(), &addr.sin_addr);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        if (port == kHostileHealthPort && i % 2 == 0)
          (void)::write(fd, "GET /hea", 8);  // slow client
        fds.push_back(fd);
      } else {
        ::close(fd);
      }
    }
  }
  EXPECT_GT(fds.size(), 2000u);
  // While they hang there: /health answers, a new minion signs in, the real one answers.
  EXPECT_TRUE(Metric(master.ip(), kHostileHealthPort, "halite_auth_total").has_value());
  auto late = SignIn(ctx_, master, "late1");
  EXPECT_TRUE(
      late.minion->Request(ctx_, late.session, wire::Value::MapOf({{"cmd", "_master_opts"}})).ok());
  EXPECT_TRUE(EveryMinionAnswers(master, "real1", {"test.ping"}, 1, &last, 60s)) << last;
  for (int fd : fds) ::close(fd);

  ASSERT_TRUE(master.Alive());
  EXPECT_TRUE(EveryMinionAnswers(master, "real1", {"test.ping"}, 1, &last)) << last;
  const long hwm_after = StatusKib(master.pid(), "VmHWM");
  EXPECT_LT(hwm_after - hwm_before, 200 * 1024) << hwm_before << " -> " << hwm_after << " KiB";
  EXPECT_GE(MetricOr0(master, Labels("halite_bad_requests_total")), 20);
}

}  // namespace
}  // namespace halite::testing
