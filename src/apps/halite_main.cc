// halite: publish a job and print the returns, with the salt CLI's habits.
//   halite [options] TARGET FUNCTION [ARG ...] [key=value ...]   (options anywhere; `--` ends them)
// Exit codes: 0 every expected minion returned and succeeded; 1 a function failed;
// 2 a minion did not return; 64 a bad option; 42 an incomplete command (both as
// salt); 78 bad config; 3 the publish itself failed.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "cli_common.h"
#include "halite/client/command_line.h"
#include "halite/client/local_client.h"
#include "halite/client/output.h"
#include "halite/version.h"
#include "halite/wire/target.h"

namespace {

void Usage(std::ostream& os) {
  os << "Usage: halite [options] TARGET FUNCTION [ARG ...] [key=value ...]\n"
        "Options may come anywhere; `--` ends them. Arguments are read as YAML, as salt does.\n"
        "FUNCTION may be several, comma-separated, with their argument lists separated by\n"
        "standalone commas: halite '*' test.ping,test.echo , hi\n"
        "  -c, --config-dir PATH  master config file, or a directory holding `master`\n"
        "                         (default /etc/halite/master)\n"
        "  -L, --list             TARGET is a comma- or space-separated list of ids\n"
        "  -E, --pcre             TARGET is a regular expression\n"
        "  -G, --grain            TARGET is grain:value\n"
        "  -P, --grain-pcre       TARGET is grain:regex\n"
        "  -I, --pillar           TARGET is pillar:value (the master's minion data cache)\n"
        "  -J, --pillar-pcre      TARGET is pillar:regex\n"
        "  -S, --ipcidr           TARGET is an address or a network (ipv4/ipv6 grains)\n"
        "  -N, --nodegroup        TARGET is a nodegroup of the master config\n"
        "  -C, --compound         TARGET is a compound expression\n"
        "  --delimiter D          key delimiter for grain and pillar targets (default :)\n"
        "  -t, --timeout SECS     wait this long for silent minions (default: config timeout)\n"
        "  --async                print the jid and return at once\n"
        "  --out FORMAT           nested (default), json, yaml, txt\n"
        "  -v, --verbose          print the jid and the minions that did not return\n"
        "  --show-jid             print the jid\n"
        "  --args-separator S     separator of multi-function argument lists (default ,)\n"
        "  --no-parse A,B         kwargs whose values stay strings\n"
        "Salt options halite does not implement yet are refused; see docs/cli.md.\n";
}

// Salt's -c names a directory holding `master`; halite's has always named the file.
std::string ConfigFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return (std::filesystem::path(path) / "master").string();
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed =
      halite::client::ParseSaltCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) {
    const int code = halite::client::CommandLineExitCode(parsed.error());
    if (code == 64) {
      std::cerr << "Usage: halite [options] TARGET FUNCTION [ARG ...] [key=value ...]\n\n"
                << "halite: error: " << parsed.error().message << "\n";
    } else {
      std::cerr << parsed.error().message << "\n";
    }
    return code;
  }
  halite::client::SaltCommandLine& cmd = *parsed;
  if (cmd.help) {
    Usage(std::cout);
    return 0;
  }
  if (cmd.version) {
    std::cout << "halite " << halite::kVersion << "\n";
    return 0;
  }
  const std::string config_path =
      ConfigFile(cmd.config_path.empty() ? halite::apps::kDefaultMasterConfig : cmd.config_path);
  const std::string out_name = cmd.out.empty() ? "nested" : cmd.out;
  const bool async = cmd.async;
  const bool verbose = cmd.verbose;
  auto format = halite::client::ParseOutputFormat(out_name);
  if (!format.ok()) {
    std::cerr << "halite: " << format.error().message << "\n";
    return 64;
  }
  auto cfg = halite::apps::LoadConfigOrComplain("halite", config_path);
  if (!cfg) return 78;

  halite::client::ClientOptions options{cfg->sock_dir, cfg->cachedir,
                                        std::chrono::milliseconds(10000)};
  auto client = halite::client::LocalClient::Connect(options);
  if (!client.ok()) {
    std::cerr << "halite: " << client.error().message << "\n";
    return 3;
  }
  halite::client::PublishRequest request;
  request.tgt = cmd.tgt;
  request.tgt_type = cmd.tgt_type;
  // Nodegroups are expanded here, from the master config, as Salt's LocalClient does, so that
  // minions receive a compound target they can match without the nodegroups.
  if (const std::string* text = cmd.tgt.str();
      text != nullptr && (cmd.tgt_type == "nodegroup" || cmd.tgt_type == "compound")) {
    auto expanded = cmd.tgt_type == "nodegroup"
                        ? halite::wire::ExpandNodegroup(*text, cfg->nodegroups)
                        : halite::wire::ExpandCompoundNodegroups(*text, cfg->nodegroups);
    if (!expanded.ok()) {
      std::cerr << "halite: " << expanded.error().message << " (" << config_path << ")\n";
      return 2;
    }
    request.tgt = halite::wire::Value(std::move(*expanded));
    request.tgt_type = "compound";
  }
  request.delimiter = cmd.delimiter;
  request.fun = cmd.fun;
  request.arg = cmd.arg;

  if (!async) {
    if (auto st = (*client)->SubscribeEvents(); !st.ok()) {
      std::cerr << "halite: " << st.error().message << "\n";
      return 3;
    }
  }
  auto job = (*client)->Publish(request);
  if (!job.ok()) {
    if (job.error().code == halite::ErrorCode::kNotFound) {
      std::cerr << job.error().message << "\n";
      return 2;
    }
    std::cerr << "halite: " << job.error().message << "\n";
    return 3;
  }
  if (async) {
    std::cout << "Executed command with job ID: " << job->jid << "\n";
    return 0;
  }
  if (verbose) {
    std::cout << "Executing job with jid " << job->jid << "\n"
              << "-------------------------------------------\n\n";
  } else if (cmd.show_jid) {
    std::cout << "jid: " << job->jid << "\n";
  }
  const bool live = ::isatty(STDERR_FILENO);
  bool failed = false;
  halite::client::WaitOptions wait;
  wait.timeout = std::chrono::seconds(cmd.timeout.value_or(static_cast<int>(cfg->timeout.count())));
  wait.gather_timeout = std::chrono::seconds(cfg->gather_job_timeout);
  if (live) {
    wait.progress = [](std::size_t got, std::size_t expected) {
      std::cerr << "\r[" << got << "/" << expected << " minions returned]" << std::flush;
    };
  }
  auto missing = (*client)->WaitForReturns(*job, wait, [&](const halite::client::MinionReturn& r) {
    if (live) std::cerr << "\r\033[K" << std::flush;
    std::cout << halite::client::FormatReturn(r.id, r.ret, *format) << std::flush;
    if ((r.retcode && *r.retcode != 0) || (r.success && !*r.success)) failed = true;
  });
  if (live) std::cerr << "\r\033[K" << std::flush;
  if (!missing.ok()) {
    std::cerr << "halite: " << missing.error().message << "\n";
    return 3;
  }
  for (const auto& id : *missing) {
    std::cout << halite::client::FormatReturn(
        id, halite::wire::Value("Minion did not return. [No response]"), *format);
  }
  if (verbose && !missing->empty()) {
    std::cout << "\n-------------------------------------------\nSummary\n"
              << "# of minions targeted: " << job->minions.size() << "\n"
              << "# of minions returned: " << job->minions.size() - missing->size() << "\n"
              << "# of minions that did not return: " << missing->size() << "\n";
  }
  if (failed || !missing->empty()) {
    std::cerr << "ERROR: Minions returned with non-zero exit code\n";
  }
  if (!missing->empty()) {
    std::cerr << "The minions may not have all finished running and any remaining minions "
                 "will return upon completion. To look up the return data for this job later, "
                 "run: halite-run jobs.lookup_jid "
              << job->jid << "\n";
    return 2;
  }
  return failed ? 1 : 0;
}
