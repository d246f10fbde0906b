#include "halite/common/file_system.h"

#include <linux/magic.h>

namespace halite {

bool SyncfsMayNotPersist(unsigned long type) {
  switch (type) {
    case FUSE_SUPER_MAGIC:
    case NFS_SUPER_MAGIC:
    case SMB_SUPER_MAGIC:
    case CIFS_SUPER_MAGIC:
    case 0xFE534D42UL:  // SMB2
    case V9FS_MAGIC:
      return true;
    default:
      return false;
  }
}

}  // namespace halite
