// halite-run: Salt's runners against the local master, as salt-run runs them (src/runners).
//   halite-run [-c CONFIG] [--out FORMAT] [-t SECS] FUNCTION [ARG ...] [key=value ...]
//   halite-run -d [MODULE | FUNCTION | GLOB]
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>

#include "cli_common.h"
#include "halite/client/cli_args.h"
#include "halite/client/local_client.h"
#include "halite/client/output.h"
#include "halite/runners/print.h"
#include "halite/runners/runner.h"
#include "halite/version.h"

namespace {

void Usage(std::ostream& os) {
  os << "usage: halite-run [-c CONFIG] [--out FORMAT] [-t SECS] FUNCTION [ARG ...] [key=value "
        "...]\n"
        "       halite-run -d [MODULE | FUNCTION]   the runners and what they do\n"
        "  jobs.active | jobs.list_job JID | jobs.print_job JID | jobs.lookup_jid JID\n"
        "  jobs.exit_success JID | jobs.list_jobs [search_function=G] [search_target=G]\n"
        "  manage.status | up | down | versions | present | not_present | joined | alived ...\n"
        "  cache.grains tgt=T | cache.pillar | cache.mine | cache.clear_grains|pillar|mine|all\n"
        "  fileserver.envs | file_list | dir_list | empty_dir_list [saltenv=ENV]\n"
        "  cluster.status | cluster.haproxy_config [bind=IP] [maxconn=N]\n"
        "Arguments are read as salt-run reads them (YAML; key=value words are keyword\n"
        "arguments). --out: nested (default), json, yaml, txt.\n";
}

std::string IsoNow() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()) % 1000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>(us.count()));
  return std::string(buf) + frac;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = halite::apps::kDefaultMasterConfig;
  std::string out_name;
  int timeout_s = -1;
  bool doc = false;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string& flag) -> std::optional<std::string> {
      if (a == flag) {
        if (i + 1 >= argc) {
          std::cerr << "halite-run: error: " << flag << " option requires 1 argument\n";
          std::exit(64);
        }
        return std::string(argv[++i]);
      }
      if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
      return std::nullopt;
    };
    if (auto v = value("-c"); v) {
      config_path = *v;
    } else if (auto v2 = value("--config"); v2) {
      config_path = *v2;
    } else if (auto o = value("--out"); o) {
      out_name = *o;
    } else if (auto o2 = value("--output"); o2) {
      out_name = *o2;
    } else if (auto t = value("-t"); t) {
      timeout_s = std::atoi(t->c_str());
    } else if (auto t2 = value("--timeout"); t2) {
      timeout_s = std::atoi(t2->c_str());
    } else if (a == "-d" || a == "--doc" || a == "--documentation") {
      doc = true;
    } else if (a == "--version") {
      std::cout << "halite-run " << halite::kVersion << "\n";
      return 0;
    } else if (a == "-h" || a == "--help") {
      Usage(std::cout);
      return 0;
    } else if (a.size() > 1 && a[0] == '-' && a.find('=') == std::string::npos &&
               positional.empty()) {
      std::cerr << "halite-run: error: no such option: " << a << "\n";
      return 64;
    } else {
      positional.push_back(a);
    }
  }
  const halite::runners::RunnerTable table = halite::runners::BuiltinRunners();
  if (doc) {
    std::cout << halite::runners::FormatDocs(
        table.Docs(positional.empty() ? std::string() : positional[0]));
    return 0;
  }
  if (positional.empty()) {
    Usage(std::cerr);
    return 64;
  }
  auto format = halite::client::ParseOutputFormat(out_name.empty() ? "nested" : out_name);
  if (!format.ok()) {
    std::cerr << "halite-run: " << format.error().message << "\n";
    return 64;
  }
  const std::string& fun = positional[0];
  const halite::runners::Runner* runner = table.Find(fun);
  if (!runner) {
    // salt-run's message, and where to look.
    std::cerr << "'" << fun << "' is not available.\nhalite-run -d lists the runners.\n";
    return 64;
  }
  auto bound = halite::runners::Bind(fun, runner->params, runner->takes_kwargs,
                                     halite::client::ParseCliArgs(std::vector<std::string>(
                                         positional.begin() + 1, positional.end())));
  if (!bound.ok()) {
    // salt-run's message, with the runner's doc as the usage.
    std::cerr << "Passed invalid arguments: " << bound.error().message << "\n\nUsage:\n"
              << runner->doc << "\n";
    return 64;
  }
  auto cfg = halite::apps::LoadConfigOrComplain("halite-run", config_path);
  if (!cfg) return 78;

  std::unique_ptr<halite::client::LocalClient> client;
  bool unreachable = false;
  halite::runners::RunnerEnv env;
  env.config = &*cfg;
  env.timeout = std::chrono::seconds(timeout_s >= 0 ? timeout_s : cfg->timeout.count());
  env.master = [&]() -> halite::Result<halite::client::LocalClient*> {
    if (!client) {
      auto c = halite::client::LocalClient::Connect(
          {cfg->sock_dir, cfg->cachedir, std::chrono::milliseconds(10000)});
      if (!c.ok()) {
        unreachable = true;
        return c.error();
      }
      client = std::move(*c);
    }
    return client.get();
  };
  env.progress = [&](const std::string& message) {
    std::cout << halite::runners::FormatProgress(message, IsoNow(), *format) << std::flush;
  };
  auto result = runner->fn(env, *bound);
  if (!result.ok()) {
    std::cerr << "halite-run: " << result.error().message << "\n";
    const auto code = result.error().code;
    return unreachable || code == halite::ErrorCode::kDeadlineExceeded ||
                   code == halite::ErrorCode::kUnavailable
               ? 3
               : 1;
  }
  if (result->outputter == "raw_text" && result->data.str()) {
    std::cout << *result->data.str();
    return 0;
  }
  // The runner's outputter (a highstate job's) unless --out names one.
  auto chosen = *format;
  if (out_name.empty() && !result->outputter.empty()) {
    if (auto named = halite::client::ParseOutputFormat(result->outputter); named.ok()) {
      chosen = *named;
    }
  }
  std::cout << halite::runners::FormatRunnerValue(result->data, chosen);
  return 0;
}
