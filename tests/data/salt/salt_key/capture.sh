#!/bin/bash
# Captures stock salt-key's output for each line of commands.txt, run in order on one pki_dir
# laid out from keys/ (web1 accepted, web2 and db2 pending, db1 rejected, bad1 denied), into
# expected/NN.out. Needs a Salt source tree and the salt-ref shims (../../../../shared/salt-ref);
# never run by CI. Run: SALT_SRC=/tmp/ref/salt3007 tests/data/salt/salt_key/capture.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../../../../shared/salt-ref/common.sh"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/pki/{minions,minions_pre,minions_rejected,minions_denied} "$root"/cache "$root"/etc/salt
printf 'id: m\npki_dir: %s/pki\ncachedir: %s/cache\nsock_dir: %s/sock\nlog_file: %s/log\n' \
  "$root" "$root" "$root" "$root" > "$root/etc/salt/master"
cp "$here/keys/web1.pub" "$root/pki/minions/web1"
cp "$here/keys/web2.pub" "$root/pki/minions_pre/web2"
cp "$here/keys/db2.pub" "$root/pki/minions_pre/db2"
cp "$here/keys/db1.pub" "$root/pki/minions_rejected/db1"
cp "$here/keys/bad1.pub" "$root/pki/minions_denied/bad1"
mkdir -p "$here/expected"
n=0
while IFS= read -r line; do
  n=$((n + 1))
  read -r -a args <<< "$line"
  # Salt's own noise (asyncio warnings, its failed .dfn-next write when no master runs) is
  # dropped; halite-key writes its drop file where salt-key fails to.
  salt_bin salt-key -c "$root/etc/salt" --no-color "${args[@]}" 2>&1 \
    | grep -v 'WARNING\|Task was destroyed\|Error: \[Errno 2\]' > "$here/expected/$(printf %02d $n).out" || true
done < "$here/commands.txt"
echo "captured $n outputs (salt-key $(salt_bin salt-key --version))"
