#include "fake_master.h"

#include <gtest/gtest.h>

#include <future>

#include "test_util.h"

namespace halite::minion::testing {

using wire::Value;

FakeMaster::FakeMaster(zmq::context_t& context)
    : context_(context),
      master_key_(wire::RsaPrivateKey::FromPem(ReadTestFile(VectorPath("key_master.pem"))).value()),
      aes_(wire::Crypticle::GenerateKeyString()),
      session_(wire::Crypticle::GenerateKeyString()) {
  std::promise<void> ready;
  thread_ = std::thread([this, &ready] { Run(&ready); });
  ready.get_future().wait();
}

FakeMaster::~FakeMaster() {
  stop_ = true;
  thread_.join();
}

std::string FakeMaster::master_pub() const {
  return wire::CleanKey(master_key_.PublicKey().ToPem());
}

void FakeMaster::SetMode(Mode mode) {
  std::lock_guard lock(mu_);
  mode_ = mode;
}

void FakeMaster::RotateAes() {
  std::lock_guard lock(mu_);
  aes_ = wire::Crypticle::GenerateKeyString();
  serial_ = 0;
}

void FakeMaster::RotateSession() {
  std::lock_guard lock(mu_);
  session_ = wire::Crypticle::GenerateKeyString();
}

void FakeMaster::Publish(Value load) {
  std::lock_guard lock(mu_);
  to_publish_.push_back(std::move(load));
}

FakeMaster::Seen FakeMaster::seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

bool FakeMaster::WaitFor(const std::function<bool(const Seen&)>& pred,
                         std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return pred(seen_); });
}

bool FakeMaster::PublishUntil(const Value& load, const std::function<bool(const Seen&)>& pred,
                              std::chrono::milliseconds timeout, std::chrono::milliseconds period) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    Publish(load);
    if (WaitFor(pred, period)) return true;
  }
  return WaitFor(pred, std::chrono::milliseconds(0));
}

const Value* FakeMaster::FindLoad(const Seen& seen, std::string_view cmd, std::string_view field,
                                  std::string_view value) {
  for (const Value& load : seen.loads) {
    const std::string* c = load.FindStr("cmd");
    if (c == nullptr || *c != cmd) continue;
    if (!field.empty()) {
      const std::string* f = load.FindStr(field);
      if (f == nullptr || *f != value) continue;
    }
    return &load;
  }
  return nullptr;
}

int FakeMaster::CountLoads(const Seen& seen, std::string_view cmd, std::string_view field,
                           std::string_view value) {
  int n = 0;
  for (const Value& load : seen.loads) {
    const std::string* c = load.FindStr("cmd");
    if (c == nullptr || *c != cmd) continue;
    if (!field.empty()) {
      const std::string* f = load.FindStr(field);
      if (f == nullptr || *f != value) continue;
    }
    ++n;
  }
  return n;
}

void FakeMaster::Run(std::promise<void>* ready) {
  zmq::socket_t router(context_, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind("tcp://127.0.0.1:*");
  zmq::socket_t pub(context_, zmq::socket_type::pub);
  pub.set(zmq::sockopt::linger, 0);
  pub.bind("tcp://127.0.0.1:*");
  auto port_of = [](zmq::socket_t& s) {
    std::string ep = s.get(zmq::sockopt::last_endpoint);
    return static_cast<std::uint16_t>(std::stoi(ep.substr(ep.rfind(':') + 1)));
  };
  ret_port_ = port_of(router);
  pub_port_ = port_of(pub);
  ready->set_value();

  while (!stop_) {
    zmq::pollitem_t items[] = {{router.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 1, std::chrono::milliseconds(10));
    if (items[0].revents & ZMQ_POLLIN) {
      std::vector<zmq::message_t> frames;
      for (;;) {
        zmq::message_t m;
        if (!router.recv(m, zmq::recv_flags::dontwait)) break;
        bool more = m.more();
        frames.push_back(std::move(m));
        if (!more) break;
      }
      if (frames.size() >= 2) {
        std::string reply = Handle(frames.back().to_string());
        router.send(frames.front(), zmq::send_flags::sndmore);
        router.send(zmq::message_t(), zmq::send_flags::sndmore);
        router.send(zmq::buffer(reply));
      }
    }
    std::deque<Value> batch;
    std::string aes;
    {
      std::lock_guard lock(mu_);
      batch.swap(to_publish_);
      aes = aes_;
    }
    for (Value& load : batch) {
      std::uint64_t serial;
      {
        std::lock_guard lock(mu_);
        serial = ++serial_;
      }
      load.Set("serial", serial);
      auto crypticle = wire::Crypticle::FromKeyString(aes).value();
      std::string ct = crypticle.Dumps(load);
      std::string sig = master_key_.Sign(ct, wire::SigHash::kSha1).value();
      Value envelope = Value::MapOf({{"enc", "aes"},
                                     {"load", Value::Bin(ct)},
                                     {"sig_algo", "PKCS1v15-SHA1"},
                                     {"sig", Value::Bin(sig)}});
      pub.send(zmq::buffer(wire::Pack(envelope)));
    }
  }
}

std::string FakeMaster::Handle(const std::string& body) {
  auto envelope = wire::Unpack(body);
  if (!envelope.ok() || !envelope->is_map()) return wire::Pack(Value("bad load"));
  const std::string* enc = envelope->FindStr("enc");
  const Value* load = envelope->Find("load");
  int version = static_cast<int>(
      envelope->Find("version") ? envelope->Find("version")->int64().value_or(0) : 0);
  if (enc == nullptr || load == nullptr) return wire::Pack(Value("bad load"));
  if (*enc == "clear") {
    const std::string* cmd = load->FindStr("cmd");
    if (cmd != nullptr && *cmd == "_auth") return HandleAuth(*load);
    return wire::Pack(Value::EmptyMap());
  }
  std::string key_string;
  {
    std::lock_guard lock(mu_);
    key_string = version >= 3 ? session_ : aes_;
  }
  auto key = wire::Crypticle::FromKeyString(key_string).value();
  const std::string* ct = load->str();
  auto decoded = ct != nullptr ? key.Loads(*ct) : Result<Value>(Error::InvalidArgument("x"));
  if (!decoded.ok() || !decoded->is_map()) {
    std::lock_guard lock(mu_);
    ++seen_.bad_loads;
    cv_.notify_all();
    return wire::Pack(Value("bad load"));
  }
  std::string nonce = decoded->FindStr("nonce") ? *decoded->FindStr("nonce") : "";
  const std::string* cmd = decoded->FindStr("cmd");
  std::string reply;
  if (cmd != nullptr && *cmd == "_pillar") {
    const std::string* id = decoded->FindStr("id");
    std::string minion_pub;
    {
      std::lock_guard lock(mu_);
      for (const Value& l : seen_.loads) {
        if (l.FindStr("cmd") && *l.FindStr("cmd") == "_auth" && l.FindStr("id") && id &&
            *l.FindStr("id") == *id) {
          minion_pub = *l.FindStr("pub");
        }
      }
    }
    auto minion_key = wire::RsaPublicKey::FromPem(minion_pub).value();
    std::string one_shot = wire::Crypticle::GenerateKeyString();
    std::string key_ct = minion_key.Encrypt(one_shot, wire::OaepHash::kSha1).value();
    std::string data = wire::Pack(Value::MapOf({{"key", Value::Bin(key_ct)},
                                                {"pillar", Value::MapOf({{"foo", "bar"}})},
                                                {"nonce", nonce}}));
    std::string sig = master_key_.Sign(data, wire::SigHash::kSha1).value();
    std::string pillar = wire::Crypticle::FromKeyString(one_shot).value().Dumps(
        Value::MapOf({{"data", Value::Bin(data)}, {"sig", Value::Bin(sig)}}));
    reply = wire::Pack(Value::MapOf({{"key", Value::Bin(key_ct)}, {"pillar", Value::Bin(pillar)}}));
  } else {
    reply = wire::Pack(Value::Bin(key.Dumps(Value(), nonce)));
  }
  std::lock_guard lock(mu_);
  seen_.loads.push_back(std::move(decoded).value());
  seen_.versions.push_back(version);
  cv_.notify_all();
  return reply;
}

std::string FakeMaster::HandleAuth(const Value& load) {
  std::string nonce = load.FindStr("nonce") ? *load.FindStr("nonce") : "";
  Mode mode;
  std::string aes, session;
  {
    std::lock_guard lock(mu_);
    ++seen_.auths;
    seen_.loads.push_back(load);
    seen_.versions.push_back(0);
    mode = mode_;
    aes = aes_;
    session = session_;
    cv_.notify_all();
  }
  Value inner;
  if (mode == Mode::kPending) {
    inner = Value::MapOf({{"ret", true}, {"nonce", nonce}});
  } else if (mode == Mode::kReject) {
    inner = Value::MapOf({{"ret", false}, {"nonce", nonce}});
  } else {
    auto minion_key = wire::RsaPublicKey::FromPem(*load.FindStr("pub")).value();
    inner = Value::MapOf({{"enc", "pub"}, {"pub_key", master_pub()}, {"publish_port", pub_port_}});
    if (const std::string* token = load.FindStr("token")) {
      // As the stock master: a token that does not decrypt is left out of the reply.
      auto plain = master_key_.Decrypt(*token, wire::OaepHash::kSha1);
      if (plain.ok()) {
        inner.Set("token", Value::Bin(minion_key.Encrypt(*plain, wire::OaepHash::kSha1).value()));
      }
    }
    inner.Set("aes", Value::Bin(minion_key.Encrypt(aes, wire::OaepHash::kSha1).value()));
    inner.Set("session", Value::Bin(minion_key.Encrypt(session, wire::OaepHash::kSha1).value()));
    inner.Set("sig", Value::Bin(master_key_.X931Sign(wire::Sha256Hex(aes)).value()));
    inner.Set("nonce", nonce);
  }
  std::string inner_bytes = wire::Pack(inner);
  std::string sig = master_key_.Sign(inner_bytes, wire::SigHash::kSha1).value();
  return wire::Pack(Value::MapOf(
      {{"enc", "clear"}, {"load", Value::Bin(inner_bytes)}, {"sig", Value::Bin(sig)}}));
}

}  // namespace halite::minion::testing
