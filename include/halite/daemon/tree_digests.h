// TreeDigests: one digest per tree a master serves from its own disk (file_roots and
// pillar_roots, per saltenv), so that masters which keep their trees locally (cluster_backend:
// etcd) can tell when they serve different ones (issue 17, cluster.status).
//
// A tree's digest is the first 16 hex digits of SHA-256 over its files, sorted by path
// relative to the saltenv ("<relpath>\0<sha256 of content>\n" each); with several roots in
// one saltenv the first root holding a path wins, as Salt's fileserver serves it. Contents
// count, not times: two masters that checked the same commit out at different moments agree.
// A missing root adds nothing. Hidden files and directories (".git") are left out. A file's
// hash is remembered while the file is unchanged (master::FileHashes), so a later Compute
// reads only what changed. Not thread-safe; blocks on disk (the maintenance loop's worker).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "halite/master/file_hashes.h"

namespace halite::daemon {

class TreeDigests {
 public:
  using Roots = std::map<std::string, std::vector<std::string>>;  // saltenv -> dirs
  // `hashes` (shared with the file server, thread-safe) remembers file hashes between
  // Computes; null: a memory of this object's own.
  explicit TreeDigests(master::FileHashes* hashes = nullptr)
      : own_(hashes ? nullptr : std::make_unique<master::FileHashes>()),
        hashes_(hashes ? hashes : own_.get()) {}
  // {"file_roots/<env>": digest, "pillar_roots/<env>": digest}.
  std::map<std::string, std::string> Compute(const Roots& file_roots, const Roots& pillar_roots);

 private:
  std::string Digest(const std::vector<std::string>& roots);
  std::unique_ptr<master::FileHashes> own_;
  master::FileHashes* hashes_;
};

}  // namespace halite::daemon
