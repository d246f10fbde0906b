#!/bin/bash
# Captures stock salt-run / salt-key 3007.8 output shapes for tests/integration's
# RunnerTest: a stock salt-master (presence_events: True, loop_interval: 5, file_roots base and
# dev) on 127.0.88.1 with minions m001 and m002 (salt-ref's single.sh), then each line of
# commands.txt as `salt-run --out json` into expected/NN.json (and the text of the lines
# marked "text" into expected/NN.txt, their exit codes into expected/exit_codes.txt), the salt/key and salt/presence events into
# expected/events.jsonl, and salt-key --gen-keys's files into expected/gen_keys.txt.
# Needs a Salt source tree and the salt-ref shims; never run by CI. Run:
#   SALT_SRC=/tmp/ref/salt3007 tests/data/salt/salt_run/capture.sh [gen-keys]
# (gen-keys: only the --gen-keys part, which needs no master).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ref=$here/../../../../../shared/salt-ref
export RUN_DIR=${RUN_DIR:-/tmp/ref/run-salt-run-capture} MASTER_IP=127.0.88.1
source "$ref/common.sh"
# salt-key --gen-keys: what it prints, the files and their modes (umask 022).
gen_keys() {
  local gen
  gen=$(mktemp -d)
  umask 022
  {
    salt_bin salt-key -c "$gen" --gen-keys=node1 --gen-keys-dir="$gen/keys" 2>&1 | quiet || true
    salt_bin salt-key -c "$gen" --gen-keys=node2 --gen-keys-dir="$gen/keys" --keysize=1024 2>&1 \
      | quiet || true
    (cd "$gen/keys" && for f in *; do stat -c '%a %n' "$f"; head -1 "$f"; done)
  } | sed 's/^    [0-9a-f:]\{95\}$/    <fingerprint of node1.pub>/' > "$here/expected/gen_keys.txt"
  rm -rf "$gen"
}
# Salt's own noise (asyncio's destroyed-task warnings) is dropped.
quiet() { grep -v '^task: <Task\|Task was destroyed\|WARNING' || true; }
if [ "${1:-}" = gen-keys ]; then
  gen_keys
  exit 0
fi
S=$RUN_DIR/single
R=$S/master/root
conf=$S/master/conf
work=$(mktemp -d)
trap '"$ref/single.sh" stop >/dev/null; rm -rf "$work"' EXIT
cat > "$work/master.yaml" <<YAML
presence_events: True
loop_interval: 5
file_roots:
  base: [$R/srv/salt]
  dev: [$R/srv/dev]
YAML
printf 'mine_functions:\n  test.ping: []\n' > "$work/minion.yaml"
"$ref/single.sh" clean >/dev/null
mkdir -p "$R/srv/salt/web/files" "$R/srv/dev/tools"
# The same tree RunnerTest gives halite-master.
printf 'base:\n  "*": [web]\n' > "$R/srv/salt/top.sls"
printf 'x: test.nop\n' > "$R/srv/salt/web/init.sls"
printf 'hi\n' > "$R/srv/salt/web/files/a.txt"
printf 'y: test.nop\n' > "$R/srv/dev/tools/init.sls"
MASTER_EXTRA=$work/master.yaml MINION_EXTRA=$work/minion.yaml "$ref/single.sh" start 2
run() { salt_bin salt-run -c "$conf" "$@" 2>&1 | quiet; }
"$PY" "$here/events.py" "$R/sock" 1800 > "$work/events" &
events_pid=$!
until grep -q listening "$work/events"; do sleep 0.2; done
# JOB1: both minions return; JOB2: m002 is down.
salt_bin salt -c "$conf" -L m001,m002 test.arg 1 two a=b --out json -t 20 | quiet > /dev/null
job1=$(run --out json jobs.list_jobs search_function=test.arg | "$PY" -c 'import json,sys; print(sorted(json.load(sys.stdin))[-1])')
"$ref/single.sh" minions 1 >/dev/null
salt_bin salt -c "$conf" -L m001,m002 test.ping --out json -t 5 | quiet > /dev/null || true
job2=$(run --out json jobs.list_jobs search_function=test.ping search_target=m001,m002 | "$PY" -c 'import json,sys; print(sorted(json.load(sys.stdin))[-1])')
sleep 12  # two loop_intervals: the presence events for m002's loss
mkdir -p "$here/expected"
rm -f "$here"/expected/*
n=0
while IFS= read -r line; do
  [ -z "$line" ] && continue
  n=$((n + 1))
  kind=${line%% *}
  cmd=${line#* }
  cmd=${cmd//JOB1/$job1}
  cmd=${cmd//JOB2/$job2}
  read -r -a args <<< "$cmd"
  if [ "$kind" = text ]; then
    rc=0
    salt_bin salt-run -c "$conf" "${args[@]}" > "$work/out" 2>&1 || rc=$?
    quiet < "$work/out" > "$here/expected/$(printf %02d $n).txt"
    echo "$(printf %02d $n) $rc" >> "$here/expected/exit_codes.txt"
  elif [ "${args[0]}" = cache.grains ]; then
    # Grains describe this host (addresses, paths, kernel): only their names are kept.
    run --out json "${args[@]}" | "$PY" -c 'import json,sys
d = json.load(sys.stdin)
print(json.dumps({m: {k: "<value>" for k in sorted(g)} for m, g in d.items()}, indent=4))' \
      > "$here/expected/$(printf %02d $n).json"
  else
    run --out json "${args[@]}" > "$here/expected/$(printf %02d $n).json"
  fi
done < "$here/commands.txt"
# salt/key events: a pending key accepted, rejected, then deleted.
cp "$here/../salt_key/keys/web2.pub" "$R/pki/minions_pre/web9"
salt_bin salt-key -c "$conf" -y -a web9 > /dev/null 2>&1
salt_bin salt-key -c "$conf" -y -r web9 --include-accepted > /dev/null 2>&1
salt_bin salt-key -c "$conf" -y -d web9 > /dev/null 2>&1
sleep 2
kill "$events_pid" 2>/dev/null || true
# presence/present repeats every loop_interval: runs of the same event are kept once.
grep -v listening "$work/events" | uniq > "$here/expected/events.jsonl"
gen_keys
echo "captured $n runner outputs (salt-run $(salt_bin salt-run --version))"
