// Facts about file systems that durability decisions depend on. Reentrant.
#pragma once

namespace halite {

// True for file systems where syncfs(2) may not reach stable storage on the server (FUSE,
// which GlusterFS uses, NFS, SMB/CIFS, 9p): there, fsync every file and directory instead.
// `type` is statfs's f_type.
bool SyncfsMayNotPersist(unsigned long type);

}  // namespace halite
