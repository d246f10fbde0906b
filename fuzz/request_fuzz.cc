// The master's request handler in process: master::HandleRequest over a MasterContext built
// on a temp dir (a real FsKeyStore with one accepted minion, session keys, the minion data
// cache, file and pillar roots) with an in-memory job cache, publisher and event sink. Replies
// are captured, not sent; each request must be answered exactly once, before HandleRequest
// returns (every backend here completes inline).
//
// request_fuzz: the input is the request body as it arrives on 4506.
// request_aes_fuzz (HALITE_FUZZ_AES): the handlers behind decryption. Byte 0 picks the
// envelope (bit 0: v3 under minion1's session key, else v2 under the AES key; bit 1: when the
// rest decodes to a map, set its id to minion1 and add minion1's valid `tok`); the rest is the
// plaintext load, sealed by the harness into a valid {enc: aes, load, version} request.
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "halite/common/check.h"
#include "halite/jobs/jid.h"
#include "halite/jobs/job_cache.h"
#include "halite/keys/fs.h"
#include "halite/keys/fs_key_store.h"
#include "halite/master/context.h"
#include "halite/master/keyring.h"
#include "halite/master/minion_data.h"
#include "halite/master/minion_keys.h"
#include "halite/master/services.h"
#include "halite/master/session_keys.h"
#include "halite/wire/crypticle.h"
#include "halite/wire/event.h"
#include "halite/wire/msgpack.h"
#include "halite/wire/rsa.h"

namespace {

namespace fs = std::filesystem;
namespace jobs = halite::jobs;
namespace keys = halite::keys;
namespace master = halite::master;
namespace wire = halite::wire;
using halite::Result;
using halite::Status;

// tests/data/vectors: crypticle.json's key (the AES key here) and cli.json's root key.
constexpr std::string_view kAesKey =
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc=";
constexpr std::string_view kRootKey =
    "yMnKy8zNzs/Q0dLT1NXW19jZ2tvc3d7f4OHi4+Tl5ufo6err7O3u7/Dx8vP0";
constexpr std::string_view kMinionId = "minion1";
constexpr std::size_t kMaxKept = 256;  // jobs and returns the fake cache holds

// Bounded, in memory, completes StoreReturn inline.
class MemoryJobCache final : public jobs::JobCache {
 public:
  Status SaveJob(const jobs::Job& job) override {
    std::lock_guard lock(mu_);
    if (jobs_.size() >= kMaxKept) jobs_.clear();
    jobs_[job.jid] = job;
    return halite::OkStatus();
  }
  Result<jobs::Job> LoadJob(std::string_view jid) override {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(std::string(jid));
    if (it == jobs_.end()) return halite::Error::NotFound("no job " + std::string(jid));
    return it->second;
  }
  void StoreReturn(jobs::JobReturn ret, StoreCallback done) override {
    jobs::StoreOutcome outcome = jobs::StoreOutcome::kStored;
    {
      std::lock_guard lock(mu_);
      if (returns_.size() >= kMaxKept) returns_.clear();
      auto key = std::make_pair(ret.jid, ret.minion_id);
      if (returns_.contains(key)) {
        outcome = jobs::StoreOutcome::kDuplicate;
      } else {
        ret.load = wire::Value();
        returns_.emplace(std::move(key), std::move(ret));
      }
    }
    done(outcome);
  }
  Result<std::vector<jobs::JobReturn>> LoadReturns(std::string_view jid) override {
    std::lock_guard lock(mu_);
    std::vector<jobs::JobReturn> out;
    for (const auto& [key, ret] : returns_) {
      if (key.first == jid) out.push_back(ret);
    }
    if (out.empty() && !jobs_.contains(std::string(jid))) {
      return halite::Error::NotFound("no job " + std::string(jid));
    }
    return out;
  }
  Result<std::vector<jobs::JobSummary>> ListJobs() override {
    std::lock_guard lock(mu_);
    std::vector<jobs::JobSummary> out;
    for (const auto& [jid, job] : jobs_) out.push_back(jobs::JobSummary{.jid = jid});
    return out;
  }
  Result<std::size_t> CleanOld(std::chrono::seconds,
                               std::chrono::system_clock::time_point) override {
    return std::size_t{0};
  }
  Status Check() override { return halite::OkStatus(); }
  void Shutdown() override {}

 private:
  std::mutex mu_;
  std::map<std::string, jobs::Job> jobs_;
  std::map<std::pair<std::string, std::string>, jobs::JobReturn> returns_;
};

class NullPublisher final : public master::JobPublisher {
 public:
  halite::Status Publish(wire::Value pub_load) override {
    (void)wire::Pack(pub_load);
    return halite::OkStatus();
  }
};

class PackingEventSink final : public master::EventSink {
 public:
  void Fire(std::string tag, wire::Value data) override { (void)wire::PackEvent(tag, data); }
};

std::string ReadVector(const char* name) {
  auto text = keys::ReadFile(fs::path(HALITE_FUZZ_VECTORS_DIR) / name);
  HALITE_CHECK(text.ok()) << name << ": " << text.error().ToString();
  return *text;
}

void WriteFile(const fs::path& path, std::string_view content) {
  fs::create_directories(path.parent_path());
  HALITE_CHECK(keys::WriteFileAtomic(path, content, 0600).ok()) << path;
}

struct Harness {
  fs::path root;
  halite::config::MasterConfig config;
  std::unique_ptr<keys::FsKeyStore> key_store;
  std::unique_ptr<master::MinionKeys> minion_keys;
  std::unique_ptr<master::SessionKeys> session_keys;
  std::unique_ptr<master::AesKeyRing> aes;
  std::optional<wire::RsaPrivateKey> master_key;
  std::optional<wire::RsaPrivateKey> minion_key;
  std::string minion_tok;  // X9.31 signature of "salt" with minion1's key
  MemoryJobCache job_cache;
  jobs::JidGenerator jids;
  NullPublisher publisher;
  PackingEventSink events;
  std::unique_ptr<master::MinionData> minion_data;
  master::Counters counters;
  master::MasterContext ctx;
  std::uint64_t runs = 0;

  Harness() {
    spdlog::set_level(spdlog::level::off);
    const char* base = fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string tmpl = std::string(base) + "/halite-request-fuzz-XXXXXX";
    HALITE_CHECK(mkdtemp(tmpl.data()) != nullptr) << "mkdtemp";
    root = tmpl;
    config.id = "fuzzmaster";
    config.pki_dir = (root / "pki").string();
    config.cachedir = (root / "cache").string();
    config.sock_dir = (root / "sock").string();
    config.file_roots = {{"base", {(root / "srv/salt").string()}}};
    config.pillar_roots = {{"base", {(root / "srv/pillar").string()}}};
    WriteFile(root / "srv/salt/top.sls", "base:\n  '*':\n    - common\n");
    WriteFile(root / "srv/salt/common.sls", "hello:\n  test.succeed_without_changes\n");
    WriteFile(root / "srv/salt/files/hello.txt", "hello\n");
    WriteFile(root / "srv/pillar/top.sls",
              "base:\n  '*':\n    - common\n  'G@os:Debian':\n"
              "    - debian\n");
    WriteFile(root / "srv/pillar/common.sls", "foo: bar\nnested:\n  a: [1, 2]\n");
    WriteFile(root / "srv/pillar/debian.sls", "os_pillar: debian\n");

    auto store = keys::FsKeyStore::Open(config.pki_dir);
    HALITE_CHECK(store.ok()) << store.error().ToString();
    key_store = std::move(*store);
    master_key = *wire::RsaPrivateKey::FromPem(ReadVector("key_master.pem"));
    minion_key = *wire::RsaPrivateKey::FromPem(ReadVector("key_minion.pem"));
    minion_tok = *minion_key->X931Sign("salt");
    HALITE_CHECK(
        key_store->Write(keys::KeyState::kAccepted, kMinionId, minion_key->PublicKey().ToPem())
            .ok());
    minion_keys = std::make_unique<master::MinionKeys>(*key_store);
    session_keys = master::MakeFileSessionKeys(fs::path(config.cachedir) / "sessions",
                                               std::chrono::seconds(86400));
    aes = std::make_unique<master::AesKeyRing>(*wire::Crypticle::FromKeyString(kAesKey));
    minion_data = std::make_unique<master::FileMinionData>(config.cachedir);

    ctx.config.Set(std::make_shared<const halite::config::MasterConfig>(config));
    ctx.auth_policy.Set(std::make_shared<const halite::keys::AuthPolicyOptions>());
    ctx.key_store = key_store.get();
    ctx.minion_keys = minion_keys.get();
    ctx.session_keys = session_keys.get();
    ctx.aes = aes.get();
    ctx.signing_key = &*master_key;
    ctx.pub_key_text = wire::CleanKey(master_key->PublicKey().ToPem());
    ctx.job_cache = &job_cache;
    ctx.jids = &jids;
    ctx.publisher = &publisher;
    ctx.events = &events;
    ctx.minion_data = minion_data.get();
    ctx.root_key = std::string(kRootKey);
    ctx.counters = &counters;
  }

  ~Harness() {
    std::error_code ignored;
    fs::remove_all(root, ignored);
  }

  // What requests leave on disk (minion data, pending and rejected keys of invented ids) is
  // wiped now and then so that long runs stay small; minion1's key and session stay.
  void Tidy() {
    if (++runs % 4096 != 0) return;
    std::error_code ignored;
    fs::remove_all(fs::path(config.cachedir) / "minions", ignored);
    for (const char* dir :
         {"minions_pre", "minions_rejected", "minions_denied", "minions_autosign"}) {
      for (const auto& entry : fs::directory_iterator(root / "pki" / dir, ignored)) {
        fs::remove_all(entry.path(), ignored);
      }
    }
  }

  void Handle(std::string body) {
    int replies = 0;
    master::HandleRequest(ctx, std::move(body), [&replies](std::string answer) {
      ++replies;
      (void)wire::Unpack(answer);
    });
    HALITE_CHECK(replies == 1) << "request answered " << replies << " times";
    Tidy();
  }

#ifdef HALITE_FUZZ_AES
  // Seals `plain` as a v2 or v3 aes request (see the top of the file).
  std::string Seal(std::uint8_t flags, std::string_view plain) {
    const bool v3 = (flags & 1) != 0;
    std::string load(plain);
    if (flags & 2) {
      auto value = wire::Unpack(plain);
      if (value.ok() && value->is_map()) {
        value->Set("id", std::string(kMinionId));
        value->Set("tok", wire::Value::Bin(minion_tok));
        load = wire::Pack(*value);
      }
    }
    master::CrypticlePtr key = aes->Current();
    if (v3) {
      auto stamp = key_store->Stamp(keys::KeyState::kAccepted, kMinionId);
      HALITE_CHECK(stamp.ok()) << stamp.error().ToString();
      auto session = session_keys->Get(kMinionId, *stamp);
      HALITE_CHECK(session.ok()) << session.error().ToString();
      key = *session;
    }
    std::string sealed = key->Encrypt(std::string(wire::Crypticle::kPicklePrefix) + load);
    wire::Value envelope = wire::Value::MapOf(
        {{"enc", "aes"}, {"load", wire::Value(std::move(sealed))}, {"version", v3 ? 3 : 2}});
    if (v3) envelope.Set("id", std::string(kMinionId));
    return wire::Pack(envelope);
  }
#endif
};

Harness& TheHarness() {
  static Harness* harness = new Harness();  // removed at exit by the atexit below
  return *harness;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  TheHarness();
  std::atexit([] { delete &TheHarness(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Harness& harness = TheHarness();
#ifdef HALITE_FUZZ_AES
  if (size == 0) return 0;
  harness.Handle(
      harness.Seal(data[0], std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1)));
#else
  harness.Handle(std::string(reinterpret_cast<const char*>(data), size));
#endif
  return 0;
}
