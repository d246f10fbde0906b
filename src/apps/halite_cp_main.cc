// halite-cp: salt-cp. Pushes files to minions in chunks with cp.recv_chunked.
//   halite-cp [options] TARGET SOURCE... DEST     (the target options of `halite`)
// Exit codes: 0 once the files went out (as salt-cp, whatever the minions answered), 2 no
// minion matched, 42 a missing source, 64 a bad option; halite's own: 78 bad config, 3 the
// master did not answer.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "cli_common.h"
#include "halite/client/salt_cp.h"
#include "halite/version.h"
#include "halite/wire/target.h"

namespace {

void Usage(std::ostream& os) {
  os << "Usage: halite-cp [options] TARGET SOURCE... DEST\n"
        "Copies files and directories (recursively) to the minions TARGET matches, as salt-cp\n"
        "does: chunks of 98304 bytes, gzip-compressed, sent with cp.recv_chunked.\n"
        "  -c, --config-dir PATH  master config file, or a directory holding `master`\n"
        "  -t, --timeout SECONDS  how long to wait for each chunk's returns\n"
        "  -C, --chunked          salt-cp's chunked transfer (halite-cp always uses it)\n"
        "  -n, --no-compression   send the chunks uncompressed\n"
        "  -E -L -G -P -N -I -J -S, --compound   target types, as halite's\n"
        "  --out OUTPUTTER        nested (default), json, yaml, txt, raw, ...\n"
        "  --no-color, -h, --help, --version\n";
}

std::string ConfigFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return (std::filesystem::path(path) / "master").string();
  }
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed =
      halite::client::ParseSaltCpCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) {
    Usage(std::cerr);
    std::cerr << "\nhalite-cp: error: " << parsed.error().message << "\n";
    return parsed.error().code == halite::ErrorCode::kFailedPrecondition ? 2 : 64;
  }
  halite::client::SaltCpCommandLine& cmd = *parsed;
  if (cmd.help) {
    Usage(std::cout);
    return 0;
  }
  if (cmd.version) {
    std::cout << "halite-cp " << halite::kVersion << "\n";
    return 0;
  }
  const std::string config_path =
      ConfigFile(cmd.config_path.empty() ? halite::apps::kDefaultMasterConfig : cmd.config_path);
  auto cfg = halite::apps::LoadConfigOrComplain("halite-cp", config_path);
  if (!cfg) return 78;
  if (const std::string* text = cmd.tgt.str(); text != nullptr && cmd.tgt_type == "nodegroup") {
    auto expanded = halite::wire::ExpandNodegroup(*text, cfg->nodegroups);
    if (!expanded.ok()) {
      std::cerr << "halite-cp: " << expanded.error().message << " (" << config_path << ")\n";
      return 2;
    }
    cmd.tgt = halite::wire::Value(std::move(*expanded));
    cmd.tgt_type = "compound";
  }
  auto client = halite::client::LocalClient::Connect(
      {cfg->sock_dir, cfg->cachedir, std::chrono::milliseconds(10000)});
  if (!client.ok()) {
    std::cerr << "halite-cp: " << client.error().message << "\n";
    return 3;
  }
  halite::client::SaltCpContext ctx{
      **client,  std::chrono::seconds(cmd.timeout.value_or(static_cast<int>(cfg->timeout.count()))),
      98304,     std::cout,
      std::cerr, ::isatty(STDOUT_FILENO) == 1};
  return halite::client::RunSaltCp(cmd, ctx);
}
