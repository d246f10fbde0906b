// Pillar compilations per second on a tree, with halite's compiler and renderer pool: what a
// master spends per `_pillar` request, without the transport. Prints
//   pillar_compiles_per_s <rate with `processes` renderers and as many callers>
//   pillar_cpu_ms_per_compile <CPU of this process and its renderers, one caller, one renderer>
// Usage: halite_pillar_bench ROOT RENDERER COUNT PROCESSES
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "halite/pillar/compiler.h"

namespace {

double CpuSeconds(int who) {
  rusage u{};
  getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

halite::pillar::PillarRequest Request(int i) {
  halite::pillar::PillarRequest r;
  r.id = "bench" + std::to_string(i % 1000);
  r.grains = halite::wire::Value::MapOf({{"id", r.id},
                                         {"os_family", i % 3 ? "Debian" : "RedHat"},
                                         {"role", i % 2 ? "app" : "web"},
                                         {"region", i % 4 ? "eu" : "us"},
                                         {"num_cpus", 4}});
  return r;
}

std::unique_ptr<halite::render::Renderer> Pool(const std::string& program, int processes) {
  halite::render::PoolOptions o;
  o.program = program;
  o.processes = processes;
  return halite::render::MakeProcessPool(o, {});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s ROOT RENDERER COUNT PROCESSES\n", argv[0]);
    return 64;
  }
  const std::string root = argv[1];
  const std::string program = argv[2];
  const int count = std::stoi(argv[3]);
  const int processes = std::stoi(argv[4]);
  halite::pillar::PillarSettings settings;
  settings.roots = {{"base", {root}}};

  // CPU per compile: one caller, one renderer; the renderer's CPU is counted once it is reaped.
  {
    auto pool = Pool(program, 1);
    halite::pillar::PillarCompiler compiler(settings, *pool);
    auto warm = compiler.Compile(Request(0));
    if (!warm.is_map() || warm.Find("_errors")) {
      std::fprintf(stderr, "the tree does not compile cleanly: %s\n", warm.ToJson().c_str());
      return 1;
    }
    const double self0 = CpuSeconds(RUSAGE_SELF);
    const double kids0 = CpuSeconds(RUSAGE_CHILDREN);
    for (int i = 0; i < count; ++i) (void)compiler.Compile(Request(i));
    pool.reset();  // reaps the renderer
    const double cpu = (CpuSeconds(RUSAGE_SELF) - self0) + (CpuSeconds(RUSAGE_CHILDREN) - kids0);
    std::printf("pillar_cpu_ms_per_compile %.3f\n", cpu * 1000.0 / count);
  }
  // Throughput: `processes` renderers, as many callers.
  {
    auto pool = Pool(program, processes);
    halite::pillar::PillarCompiler compiler(settings, *pool);
    for (int i = 0; i < processes * 2; ++i) (void)compiler.Compile(Request(i));
    std::atomic<int> next{0};
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> callers;
    for (int t = 0; t < processes; ++t) {
      callers.emplace_back([&] {
        for (int i; (i = next++) < count;) (void)compiler.Compile(Request(i));
      });
    }
    for (auto& c : callers) c.join();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("pillar_compiles_per_s %.1f\n", count / secs);
  }
  return 0;
}
