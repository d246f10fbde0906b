#pragma once
// Pillar compilation as Salt's master does it (salt/pillar/__init__.py is the reference for
// behaviour): top files from each pillar environment, rendered like any sls; targets matched;
// sls files found (globs), rendered, their `include:`s followed; the results merged by
// `pillar_source_merging_strategy`; failures reported in `_errors` in Salt's words while the
// rest of the pillar is still served; the minion's `pillar_override` merged last. Rendering
// itself is behind render::Renderer (Jinja2 in halite-render processes).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "halite/common/result.h"
#include "halite/render/renderer.h"
#include "halite/wire/msgpack.h"
#include "halite/wire/target.h"

namespace halite::pillar {

using Roots = std::vector<std::pair<std::string, std::vector<std::string>>>;  // saltenv order

struct PillarSettings {
  Roots roots{{"base", {"/srv/pillar"}}};
  std::string state_top = "top.sls";
  std::string renderer = "jinja|yaml";     // only its last step matters here (yamlex)
  std::string merging_strategy = "smart";  // smart, recurse, aggregate, overwrite, none
  bool merge_lists = false;                // pillar_merge_lists
  bool includes_override_sls = false;      // pillar_includes_override_sls
  bool safe_render_error = true;           // pillar_safe_render_error
  std::string pillarenv;                   // empty: every environment
  bool pillarenv_from_saltenv = false;
  wire::Nodegroups nodegroups;  // for `match: nodegroup` and N@
  wire::Value opts;             // extra keys for the templates' `opts`
  wire::Value ext_pillar;       // Salt's list of {name: args}; nil: none
  bool ext_pillar_first = false;
};

// An external pillar source: Salt's ext_pillar(minion_id, pillar, *args) as an interface. The
// built-ins run in the renderer pool; MakeExtPillar returns null for a name it does not know.
class ExtPillar {
 public:
  virtual ~ExtPillar() = default;
  virtual Result<wire::Value> Run(const std::string& minion_id, const wire::Value& pillar,
                                  const wire::Value& args,
                                  const std::vector<std::string>& nodegroups) = 0;
};
std::unique_ptr<ExtPillar> MakeExtPillar(const std::string& name, render::Renderer& renderer);

struct PillarRequest {
  std::string id;
  wire::Value grains;           // the minion's grains (id set)
  std::string saltenv;          // empty: not given
  std::string pillarenv;        // empty: not given
  wire::Value pillar_override;  // a map, or nil
  render::HostCall host;        // what templates ask of the master (the mine); empty: none
};

class PillarCompiler {
 public:
  PillarCompiler(PillarSettings settings, render::Renderer& renderer);

  // Always a map; what failed is listed under `_errors` (and logged).
  wire::Value Compile(const PillarRequest& request) const;

  // `halite-master --check`: every top file and sls under pillar_roots that does not parse,
  // as "path: reason". Empty when all parse.
  std::vector<std::string> CheckTree() const;

  const PillarSettings& settings() const { return settings_; }

 private:
  PillarSettings settings_;
  render::Renderer& renderer_;
};

// salt.utils.dictupdate.merge: `b` merged into `a` by strategy.
wire::Value Merge(const wire::Value& a, const wire::Value& b, const std::string& strategy,
                  const std::string& renderer, bool merge_lists);

// Python's fnmatch.fnmatchcase on a list (the sls names of an environment), in list order.
std::vector<std::string> FnmatchFilter(const std::vector<std::string>& names,
                                       const std::string& pattern);

}  // namespace halite::pillar
