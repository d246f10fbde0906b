#pragma once
// `salt-cp` as salt/cli/cp.py runs it, for halite-cp: TARGET SOURCE... DEST, the same target
// options as `halite` (-E -L -G -P -N -I -J -S --compound), the files pushed to the minions in
// chunks of salt_cp_chunk_size (98304 bytes, Salt's master default) with cp.recv_chunked,
// gzip-compressed unless -n, each file's mode set by its first chunk, empty directories
// made with a nil chunk; the returns printed as Salt prints them ({minion: {path: True}},
// nested by default). Runs on the caller's thread.

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "halite/client/local_client.h"
#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::client {

struct SaltCpCommandLine {
  std::string config_path;  // -c
  std::string tgt_type = "glob";
  wire::Value tgt;  // a list for -L
  std::vector<std::string> sources;
  std::string dest;
  bool chunked = false;  // -C: accepted; halite-cp always sends chunks (see docs/cli.md)
  bool gzip = true;      // -n / --no-compression clears it
  std::optional<int> timeout;
  std::string out;  // --out; empty: nested
  bool no_color = false;
  bool help = false;
  bool version = false;
};

// InvalidArgument (exit 64) for unknown options and missing values; FailedPrecondition
// ("Insufficient arguments", Salt exits 2) for fewer than TARGET SOURCE DEST... words.
Result<SaltCpCommandLine> ParseSaltCpCommandLine(const std::vector<std::string>& words);

// What salt-cp sends where (_list_files, _get_remote_path): every regular file under the
// sources with its mode, and the empty directories, each with its path on the minions.
struct CpPlan {
  struct File {
    std::string local;
    std::string remote;
    std::int64_t mode = 0;  // permission bits (07777)
  };
  std::vector<File> files;               // sorted by local path
  std::vector<std::string> remote_dirs;  // empty directories, sorted
};
// NotFound ("X does not exist", Salt exits 42) for a missing source.
Result<CpPlan> PlanCopy(const std::vector<std::string>& sources, const std::string& dest);

struct SaltCpContext {
  LocalClient& client;
  std::chrono::seconds timeout{5};
  std::size_t chunk_size = 98304;  // salt_cp_chunk_size
  std::ostream& out;
  std::ostream& err;
  bool out_is_terminal = false;
};

// 0 once every file went out (Salt's exit code whatever the minions answered), 42 for a
// missing source, 2 when nothing matched the target, 3 when the master did not answer.
int RunSaltCp(const SaltCpCommandLine& cmd, SaltCpContext& ctx);

}  // namespace halite::client
