// Google Benchmark micro-benchmarks of the hot paths: Crypticle, msgpack of a typical
// return, the RSA operations of an _auth, and job cache writes. Run:
//   build/release/bench/halite_micro_bench
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "halite/jobs/job_cache_registry.h"
#include "halite/wire/crypticle.h"
#include "halite/wire/encoding.h"
#include "halite/wire/msgpack.h"
#include "halite/wire/rsa.h"

namespace {

using halite::wire::Value;

Value TypicalReturn() {
  return Value::MapOf(
      {{"cmd", "_return"},
       {"id", "minion-0042"},
       {"success", true},
       {"return",
        Value::MapOf(
            {{"pid", 4242}, {"retcode", 0}, {"stdout", std::string(200, 'x')}, {"stderr", ""}})},
       {"retcode", 0},
       {"jid", "20261129120000123456"},
       {"fun", "cmd.run_all"},
       {"fun_args", Value(halite::wire::Array{"uptime"})},
       {"nonce", "0123456789abcdef0123456789abcdef"},
       {"ts", 1700000000}});
}

void BM_MsgpackPackReturn(benchmark::State& state) {
  Value v = TypicalReturn();
  for (auto _ : state) benchmark::DoNotOptimize(halite::wire::Pack(v));
}
BENCHMARK(BM_MsgpackPackReturn);

void BM_MsgpackUnpackReturn(benchmark::State& state) {
  std::string bytes = halite::wire::Pack(TypicalReturn());
  for (auto _ : state) benchmark::DoNotOptimize(halite::wire::Unpack(bytes));
}
BENCHMARK(BM_MsgpackUnpackReturn);

void BM_CrypticleDumps(benchmark::State& state) {
  auto c = *halite::wire::Crypticle::FromKeyString(halite::wire::Crypticle::GenerateKeyString());
  Value v = TypicalReturn();
  for (auto _ : state) benchmark::DoNotOptimize(c.Dumps(v, "0123456789abcdef0123456789abcdef"));
}
BENCHMARK(BM_CrypticleDumps);

void BM_CrypticleLoads(benchmark::State& state) {
  auto c = *halite::wire::Crypticle::FromKeyString(halite::wire::Crypticle::GenerateKeyString());
  std::string ct = c.Dumps(TypicalReturn());
  for (auto _ : state) benchmark::DoNotOptimize(c.Loads(ct));
}
BENCHMARK(BM_CrypticleLoads);

const halite::wire::RsaPrivateKey& Key() {
  static auto* key = new halite::wire::RsaPrivateKey(*halite::wire::RsaPrivateKey::Generate(2048));
  return *key;
}

void BM_RsaPkcs1Sign(benchmark::State& state) {
  (void)Key();  // key generation stays out of the timed loop
  std::string msg(300, 'm');
  for (auto _ : state) {
    benchmark::DoNotOptimize(Key().Sign(msg, halite::wire::SigHash::kSha1));
  }
}
BENCHMARK(BM_RsaPkcs1Sign);

void BM_RsaOaepDecrypt(benchmark::State& state) {
  std::string ct = *Key().PublicKey().Encrypt(std::string(76, 'k'), halite::wire::OaepHash::kSha1);
  for (auto _ : state) benchmark::DoNotOptimize(Key().Decrypt(ct, halite::wire::OaepHash::kSha1));
}
BENCHMARK(BM_RsaOaepDecrypt);

void BM_RsaOaepEncrypt(benchmark::State& state) {
  auto pub = Key().PublicKey();
  for (auto _ : state) {
    benchmark::DoNotOptimize(pub.Encrypt(std::string(76, 'k'), halite::wire::OaepHash::kSha1));
  }
}
BENCHMARK(BM_RsaOaepEncrypt);

void BM_X931Recover(benchmark::State& state) {
  auto pub = Key().PublicKey();
  std::string tok = *Key().X931Sign("salt");
  for (auto _ : state) benchmark::DoNotOptimize(pub.X931Recover(tok));
}
BENCHMARK(BM_X931Recover);

// Durable returns per second into one job cache backend: `range(0)` returns in flight.
// `options` is the backend's YAML (postgres: {dsn: ...}).
void BM_DurableReturns(benchmark::State& state, const std::string& backend,
                       const YAML::Node& options) {
  auto dir = std::filesystem::temp_directory_path() / "halite-bench-jobcache";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  halite::jobs::JobCacheRegistry registry;
  halite::jobs::RegisterBuiltinJobCaches(registry);
  auto cache = registry.Create(backend, {dir, "bench"}, options);
  if (!cache.ok()) {
    state.SkipWithError(cache.error().message.c_str());
    return;
  }
  // A fresh jid per run, so that a database backend does not count earlier runs' rows as
  // duplicates.
  const std::string jid =
      "2026" +
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count()).substr(0, 16);
  std::int64_t n = 0;
  const std::int64_t batch = state.range(0);
  for (auto _ : state) {
    std::mutex mu;
    std::condition_variable cv;
    std::int64_t done = 0;
    for (std::int64_t i = 0; i < batch; ++i, ++n) {
      halite::jobs::JobReturn r;
      r.jid = jid;
      r.minion_id = "minion-" + std::to_string(n);
      r.ret = Value(true);
      r.retcode = 0;
      r.success = true;
      (*cache)->StoreReturn(std::move(r), [&](halite::Result<halite::jobs::StoreOutcome>) {
        std::lock_guard lock(mu);
        ++done;
        cv.notify_one();
      });
    }
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done == batch; });
  }
  state.SetItemsProcessed(n);
  (*cache)->Shutdown();
  std::filesystem::remove_all(dir);
}

// One BM_DurableReturns/<backend> per built-in backend. Postgres runs only when
// HALITE_BENCH_PG_DSN names a database to write into.
void RegisterDurableReturns() {
  halite::jobs::JobCacheRegistry registry;
  halite::jobs::RegisterBuiltinJobCaches(registry);
  for (const std::string& backend : registry.Names()) {
    YAML::Node options(YAML::NodeType::Map);
    if (backend == "postgres") {
      const char* dsn = std::getenv("HALITE_BENCH_PG_DSN");
      if (dsn == nullptr) continue;
      options["dsn"] = dsn;
    }
    benchmark::RegisterBenchmark(("BM_DurableReturns/" + backend).c_str(), BM_DurableReturns,
                                 backend, options)
        ->Arg(1)
        ->Arg(64)
        ->Arg(1024)
        ->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  RegisterDurableReturns();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
