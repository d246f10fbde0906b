// Small POSIX file helpers for the key store and the files next to it (pki_dir, cachedir).
//
// Every function is thread-safe and may be called from several processes at once on a shared
// directory (two masters on one cluster_pki_dir). All of them block on disk: call them from
// the blocking pool or from a thread that may block, never from an event loop.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "halite/common/result.h"

namespace halite::keys {

// Maps an errno value to an Error: ENOENT/ENOTDIR -> NotFound, EEXIST -> AlreadyExists,
// EACCES/EPERM/EROFS -> PermissionDenied, ENOSPC/EDQUOT -> ResourceExhausted, anything else
// -> Unavailable. The message is "<what>: <strerror>".
Error ErrnoError(int err, std::string_view what);

// Whether a write must survive a crash once the call returns. kNone is for caches, and for
// writers that make a batch durable later in one go (keys::GroupSync): the data and the new
// name reach the disk whenever the kernel writes them back.
enum class Sync { kDurable, kNone };

// Replaces `path` with `content` so that readers see either the old or the new file, never a
// torn one: a uniquely named temp file in the same directory (".<name>.tmp-<random>") is
// written, chmod'ed to `mode`, fsync'ed and renamed over `path`, then the directory is
// fsync'ed. When several writers race, the last rename wins. The temp file is removed on
// failure. With Sync::kNone both fsyncs are skipped: after a crash the file may be the old
// one, missing, or (on file systems that do not order data before the rename) empty.
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view content, mode_t mode,
                       Sync sync = Sync::kDurable);

// Creates `path` with `content` and `mode` only if nothing is there yet. Returns true when this
// call created it and false when the path already existed (content untouched). The file
// appears complete or not at all: the data goes to a synced temp file that is then link()ed
// (or renameat2(RENAME_NOREPLACE)d) into place, so a racing loser that reads the winner's file
// never sees it half written. The directory is fsync'ed.
Result<bool> CreateFileExclusive(const std::filesystem::path& path, std::string_view content,
                                 mode_t mode);

// The whole file. NotFound when nothing is there or the path is not a regular file (a
// directory, a FIFO), as Python's os.path.isfile sees it. Symlinks are followed.
Result<std::string> ReadFile(const std::filesystem::path& path);

// unlink()s `path` and fsyncs its directory, so the removal survives a crash. NotFound when
// nothing is there.
Status RemoveFile(const std::filesystem::path& path);

// Creates `path` and any missing parents. Directories made here get exactly `mode` (umask does
// not apply); existing ones are left as they are. FailedPrecondition when something that is
// not a directory is in the way. Safe when another process creates the same directory. A new
// directory's parent is fsync'ed unless `sync` is Sync::kNone.
Status EnsureDir(const std::filesystem::path& path, mode_t mode, Sync sync = Sync::kDurable);

}  // namespace halite::keys
