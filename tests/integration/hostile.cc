// The hostile-input tests' shared helpers (hostile.h).
#include "hostile.h"

#include <fstream>

namespace halite::testing {

using namespace std::chrono_literals;

// A field of /proc/<pid>/status in KiB (VmRSS, VmHWM).
long StatusKib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

double MetricOr0(const MasterUnderTest& m, const std::string& name) {
  return Metric(m.ip(), kHostileHealthPort, name).value_or(0);
}

std::string Labels(const std::string& name, const std::string& extra) {
  return name + "{master=\"m1\"" + (extra.empty() ? "" : "," + extra) + "}";
}

MasterSpec Spec(bool auto_accept, std::string extra_yaml) {
  MasterSpec spec;
  spec.id = "m1";
  spec.auto_accept = auto_accept;
  spec.extra_yaml = std::move(extra_yaml);
  spec.health_port = kHostileHealthPort;
  return spec;
}

std::unique_ptr<client::LocalClient> ClientFor(const MasterUnderTest& m) {
  auto c = client::LocalClient::Connect(
      {(m.dir() / "sock").string(), (m.dir() / "cache").string(), 10s});
  EXPECT_TRUE(c.ok()) << c.error().ToString();
  return std::move(*c);
}

Signed SignIn(zmq::context_t& ctx, const MasterUnderTest& master, const std::string& id) {
  auto m = std::make_unique<RawMinion>(id, NewKey(), RetEndpoint(master));
  auto auth = m->Auth(ctx, MasterPub(master));
  EXPECT_TRUE(auth.ok() && auth->aes && auth->session)
      << (auth.ok() ? auth->inner.ToJson() : auth.error().ToString());
  if (!auth.ok() || !auth->aes || !auth->session) {
    auto k = wire::Crypticle::FromKeyString(wire::Crypticle::GenerateKeyString());
    return Signed{std::move(m), *k, *k};
  }
  return Signed{std::move(m), *auth->aes, *auth->session};
}

bool IsBadLoad(const std::optional<std::string>& reply) {
  if (!reply) return false;
  auto v = wire::Unpack(*reply);
  return v.ok() && v->str() && *v->str() == "bad load";
}

// Publishes `fun` to `tgt` through the local client; the jid.
std::string PublishJob(const MasterUnderTest& master, const std::string& tgt,
                       const std::string& tgt_type) {
  auto client = ClientFor(master);
  client::PublishRequest req;
  req.tgt = wire::Value(tgt);
  req.tgt_type = tgt_type;
  req.fun = "test.ping";
  auto pub = client->Publish(req);
  EXPECT_TRUE(pub.ok()) << pub.error().ToString();
  return pub.ok() ? pub->jid : std::string();
}

// The minion ids with a stored return for `jid`.
std::vector<std::string> Returned(const MasterUnderTest& master, const std::string& jid) {
  auto client = ClientFor(master);
  auto job = client->LookupJid(jid);
  std::vector<std::string> ids;
  if (!job.ok()) return ids;
  if (const wire::Value* rets = job->Find("returns"); rets && rets->map()) {
    for (const auto& [k, v] : *rets->map()) {
      if (k.str()) ids.push_back(*k.str());
    }
  }
  return ids;
}

wire::Value ReturnLoad(const std::string& jid, const std::string& text) {
  return wire::Value::MapOf({{"cmd", "_return"},
                             {"jid", jid},
                             {"fun", "test.ping"},
                             {"return", text},
                             {"retcode", 0},
                             {"success", true}});
}

zmq::socket_t EventBusSubscriber(zmq::context_t& ctx, const MasterUnderTest& master) {
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "");
  sub.connect("ipc://" + (master.dir() / "sock" / "halite_event_pub.ipc").string());
  return sub;
}

bool EventsUntil(zmq::socket_t& sub, const std::string& marker, std::vector<wire::Event>& seen) {
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (std::chrono::steady_clock::now() < deadline) {
    zmq::pollitem_t item{static_cast<void*>(sub), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, 200ms);
    if (!(item.revents & ZMQ_POLLIN)) continue;
    zmq::message_t msg;
    (void)sub.recv(msg);
    auto ev = wire::UnpackEvent(msg.to_string_view());
    if (!ev.ok()) continue;
    seen.push_back(*ev);
    if (ev->tag == marker) return true;
  }
  return false;
}

void ExpectEachAnsweredOrDropped(const MasterUnderTest& master, zmq::socket_t& dealer,
                                 int pipelined, int min_answered) {
  const std::string dropped = Labels("halite_minion_requests_dropped_total");
  int answered = 0;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (answered + MetricOr0(master, dropped) < pipelined &&
         std::chrono::steady_clock::now() < deadline) {
    zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, 500ms) <= 0) continue;
    std::vector<zmq::message_t> frames;
    ASSERT_TRUE(zmq::recv_multipart(dealer, std::back_inserter(frames)).has_value());
    ++answered;
  }
  EXPECT_GE(answered, min_answered);
  EXPECT_EQ(answered + MetricOr0(master, dropped), pipelined);
  EXPECT_EQ(MetricOr0(master, Labels("halite_minion_requests_waiting")), 0);
}

}  // namespace halite::testing
