// halite: publish a job and print the returns, with the salt CLI's habits.
//   halite [options] TARGET FUNCTION [ARG ...] [key=value ...]   (options anywhere; `--` ends them)
// Exit codes are salt's (docs/cli.md has the table): 0; 1 a non-zero retcode or a minion that
// did not return; 2 nothing matched or nothing returned; the highest retcode with -b; 64 a bad
// option; 42 an incomplete command; halite's own: 78 bad config, 3 the master did not answer.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "cli_common.h"
#include "cli_job_cache.h"
#include "halite/client/command_line.h"
#include "halite/client/local_client.h"
#include "halite/client/output.h"
#include "halite/client/salt_command.h"
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
        "  --out FORMAT           nested (default), highstate, json, yaml, txt, raw, pprint,\n"
        "                         newline_values_only\n"
        "  --out-indent N, --out-file FILE, --out-file-append, --no-color, --force-color\n"
        "  --state-output full|terse|mixed|changes[_id], --state-verbose true|false,\n"
        "  --output-diff          the highstate outputter's options\n"
        "  -b, --batch N|N%       run on N minions (or N% of those answering) at a time\n"
        "  --batch-wait SECS      keep a batch slot closed this long after a return\n"
        "  --failhard             stop a batch at the first non-zero retcode\n"
        "  -s, --static           print every return at once, when all are in\n"
        "  -p, --progress         a progress bar, then the summary\n"
        "  --summary              a summary after the returns\n"
        "  --hide-timeout         do not list minions that did not return\n"
        "  --return R, --return_config C, --metadata YAML   passed on in the publish\n"
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
  auto format = halite::client::ParseOutputFormat(cmd.out.empty() ? "nested" : cmd.out);
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
  (*client)->SetJobCacheReader(halite::apps::JobCacheReaderFor(*cfg), [](const std::string& line) {
    std::cerr << "halite: " << line << "\n";
  });
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
  halite::client::SaltCommandContext ctx{**client,
                                         std::move(request),
                                         cfg->timeout,
                                         cfg->gather_job_timeout,
                                         std::cout,
                                         std::cerr,
                                         ::isatty(STDOUT_FILENO) == 1,
                                         ::isatty(STDERR_FILENO) == 1};
  return halite::client::RunSaltCommand(cmd, ctx);
}
