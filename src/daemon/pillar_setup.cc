// Config to pillar: the renderer pool's options and Salt's pillar settings.

#include "halite/daemon/pillar_setup.h"

#include <algorithm>
#include <thread>

#include "halite/master/minion_data.h"

namespace halite::daemon {

std::unique_ptr<render::Renderer> MakeRendererPool(const config::MasterConfig& c) {
  render::PoolOptions pool;
  pool.program = c.render_program;
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  pool.processes = c.render_processes > 0 ? c.render_processes : std::min(cores, 4);
  pool.timeout = c.render_timeout_ms;
  pool.memory_limit_bytes = c.render_memory_limit;
  pool.max_output_bytes = c.render_max_output;
  render::RenderSettings settings;
  settings.renderer = c.renderer;
  settings.renderer_blacklist = c.renderer_blacklist;
  settings.renderer_whitelist = c.renderer_whitelist;
  settings.jinja_env = master::YamlNodeToValue(c.jinja_env);
  settings.jinja_sls_env = master::YamlNodeToValue(c.jinja_sls_env);
  settings.allow_undefined = c.allow_undefined;
  settings.allow_cmd_run = c.pillar_allow_cmd_run;
  settings.gpg_keydir = c.gpg_keydir;
  return render::MakeProcessPool(std::move(pool), std::move(settings));
}

pillar::PillarSettings PillarSettingsFrom(const config::MasterConfig& c) {
  pillar::PillarSettings s;
  s.roots.clear();
  // Salt's order: base first, then the other environments.
  if (auto it = c.pillar_roots.find("base"); it != c.pillar_roots.end()) s.roots.emplace_back(*it);
  for (const auto& [env, dirs] : c.pillar_roots) {
    if (env != "base") s.roots.emplace_back(env, dirs);
  }
  s.state_top = c.state_top;
  s.renderer = c.renderer;
  s.merging_strategy = c.pillar_source_merging_strategy;
  s.merge_lists = c.pillar_merge_lists;
  s.includes_override_sls = c.pillar_includes_override_sls;
  s.safe_render_error = c.pillar_safe_render_error;
  s.pillarenv = c.pillarenv;
  s.pillarenv_from_saltenv = c.pillarenv_from_saltenv;
  s.nodegroups = c.nodegroups;
  s.ext_pillar = master::YamlNodeToValue(c.ext_pillar);
  s.ext_pillar_first = c.ext_pillar_first;
  wire::Value opts = wire::Value::EmptyMap();
  opts.Set("renderer", c.renderer);
  opts.Set("state_top", c.state_top);
  opts.Set("master_id", c.id);
  opts.Set("cachedir", c.cachedir);
  opts.Set("pillar_source_merging_strategy", c.pillar_source_merging_strategy);
  wire::Value file_roots = wire::Value::EmptyMap();
  for (const auto& [env, dirs] : c.file_roots) {
    wire::Array a;
    for (const auto& d : dirs) a.emplace_back(d);
    file_roots.Set(env, wire::Value(std::move(a)));
  }
  opts.Set("file_roots", file_roots);
  s.opts = std::move(opts);
  return s;
}

}  // namespace halite::daemon
