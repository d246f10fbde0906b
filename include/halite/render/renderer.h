#pragma once
// Template rendering for pillar: a file and its context in, data out. Salt's templates are
// defined by Jinja2, so the one backend renders with Jinja2 itself, in a pool of halite-render
// processes (CPython embedded) that the master owns: a template that crashes, loops or eats
// memory takes down one renderer, never the master, which restarts it.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::render {

// What a render needs besides the file: Salt's renderer settings, the same for every file a
// master renders.
struct RenderSettings {
  std::string renderer = "jinja|yaml";  // the pipeline for a file without a `#!` line
  std::vector<std::string> renderer_blacklist;
  std::vector<std::string> renderer_whitelist;
  wire::Value jinja_env;         // Jinja Environment options for templates that are not sls
  wire::Value jinja_sls_env;     // ... and for sls files
  bool allow_undefined = false;  // Salt's `allow_undefined`: off means StrictUndefined
  bool allow_cmd_run = false;    // salt['cmd.run'] in a template runs on the master
  std::string gpg_keydir;        // for `|gpg`; empty: encrypted data is an error
};

// A function a template calls that only the master can answer (Salt's
// `salt['saltutil.runner']('mine.get', ...)` reads the mine of every minion): the renderer asks
// mid-render, the pool answers through this. `name` is the function, `args` a map of its
// arguments. Errors fail the file as a template error would.
using HostCall =
    std::function<Result<wire::Value>(const std::string& name, const wire::Value& args)>;

struct RenderRequest {
  std::string file;                     // absolute path of the template
  std::vector<std::string> searchpath;  // the saltenv's roots: imports resolve only here
  std::string saltenv = "base";
  std::string sls;      // "a.b" for an sls, "" for a top file
  wire::Value context;  // a map: grains, pillar, opts, and include defaults
  HostCall host;        // empty: templates that need the master fail with a clear error
};

// The render failed for a reason in the file (kInvalidArgument: syntax, undefined variable,
// YAML, an unknown salt function) or in the renderer (kDeadlineExceeded: killed at the
// deadline; kUnavailable: it crashed or could not start; kResourceExhausted: output too big).
class Renderer {
 public:
  virtual ~Renderer() = default;
  virtual Result<wire::Value> Render(const RenderRequest& request) = 0;
  // Syntax only (the Jinja parse, or the YAML/JSON parse of a file with no template step), for
  // `halite-master --check`.
  virtual Status Check(const std::string& file, const std::vector<std::string>& searchpath) = 0;
  // An ext_pillar built-in (cmd_yaml, cmd_json, file_tree) run in a renderer, so that a command
  // that hangs is killed at the deadline like a template.
  virtual Result<wire::Value> ExtPillar(const std::string& name, const std::string& minion_id,
                                        const wire::Value& args,
                                        const std::vector<std::string>& nodegroups) = 0;
};

struct PoolOptions {
  std::string program;                          // the halite-render executable
  int processes = 1;                            // at most this many renderers at once
  std::chrono::milliseconds timeout{10'000};    // per file; a renderer past it is killed
  std::size_t memory_limit_bytes = 1ull << 30;  // RLIMIT_AS of each renderer
  std::size_t max_output_bytes = 16u << 20;     // rendered data bigger than this is an error
  int max_host_calls = 1000;                    // per file: a template looping on the master
  bool allow_test_ops = false;                  // tests only: the "crash" and "spin" ops
};

// The halite-render executable next to the running program, else the installed one.
std::string DefaultRendererProgram();

std::unique_ptr<Renderer> MakeProcessPool(PoolOptions options, RenderSettings settings);

// Counters for /metrics.
struct PoolStats {
  std::uint64_t renders = 0;
  std::uint64_t failures = 0;  // the file's fault
  std::uint64_t timeouts = 0;
  std::uint64_t crashes = 0;
  std::uint64_t spawns = 0;
};
PoolStats StatsOf(const Renderer& renderer);

// Tests only: ask a renderer of the pool to crash or spin (PoolOptions::allow_test_ops).
Result<wire::Value> SendTestOp(Renderer& renderer, const std::string& op);

}  // namespace halite::render
