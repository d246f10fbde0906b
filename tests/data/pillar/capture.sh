#!/bin/bash
# capture.sh <tree-dir>... : produce <tree>/expected/*.json from a STOCK salt-master 3007.x.
# Not run by CI.  Needs the salt-ref harness (/work/shared/salt-ref, or $SALT_REF) and an
# extracted Salt source tree ($SALT_SRC, default /tmp/ref/salt3007).  Everything on 127.0.0.0/8.
#
# For each tree:
#   1. master config = salt-ref write_master_conf defaults (auto_accept, log levels, cache dirs)
#      + every key of <tree>/master.yaml, with relative pillar_roots paths made absolute
#      (relative to <tree>/).
#   2. one stock salt-minion per top-level key of <tree>/minions.yaml; its `grains:` mapping
#      becomes the minion config `grains:` key (static grains), its optional `config:` mapping
#      is merged into the minion config as well (e.g. pillarenv, saltenv).
#   2b. if <tree>/capture-mine exists: salt '*' mine.update, then each minion's stored mine
#      (<cachedir>/minions/<id>/mine.p) -> expected/<id>.mine.json
#   3. salt '*' saltutil.refresh_pillar ; salt '*' pillar.items --out json --static
#      -> expected/<id>.json (that minion's dict, keys sorted)
#   4. for every expected/<id>.override.input.json:
#      salt <id> pillar.items pillar='<that json>' --out json --static -> expected/<id>.override.json
#   4b. if <tree>/capture-raw exists: salt '*' pillar.raw (the pillar the minion got from its own
#      refresh request, which sends the minion's saltenv) -> expected/<id>.raw.json
#   5. ERROR lines of the master log (timestamps stripped) -> expected/master-errors.log (info only)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SALT_REF=${SALT_REF:-/work/shared/salt-ref}
: "${RUN_DIR:=/tmp/ref/run-pillar}"
export RUN_DIR
. "$SALT_REF/common.sh"
MASTER_IP=${MASTER_IP:-127.0.0.7}
assert_loopback "$MASTER_IP"

run_tree() {
  local tree=$1 S="$RUN_DIR/cap" conf ids id f
  tree=$(cd "$tree" && pwd)
  echo "== $tree"
  rm -rf "$S"; mkdir -p "$S/pids" "$tree/expected"
  # master config: absolute pillar_roots
  "$PY" - "$tree" "$S/master-extra.yaml" <<'PYEOF'
import sys, os, yaml
tree, out = sys.argv[1], sys.argv[2]
m = yaml.safe_load(open(os.path.join(tree, "master.yaml"))) or {}
for env, paths in (m.get("pillar_roots") or {}).items():
    m["pillar_roots"][env] = [p if os.path.isabs(p) else os.path.join(tree, p) for p in paths]
yaml.safe_dump(m, open(out, "w"), default_flow_style=False)
PYEOF
  conf=$S/master/conf
  write_master_conf "$conf" "$S/master/root" refmaster "$MASTER_IP" "$S/master-extra.yaml"
  # write_master_conf puts pillar_roots: base: [srv/pillar]; master.yaml replaces it entirely.
  start_daemon master "$conf" "$S/pids/master" "$S/master/stdout.log"
  wait_for 60 bash -c "ss -ltn | grep -q '$MASTER_IP:4506 '" || { echo "master failed"; tail "$S/master/stdout.log"; return 1; }
  ids=$("$PY" -c 'import sys,yaml; print(" ".join(yaml.safe_load(open(sys.argv[1])).keys()))' "$tree/minions.yaml")
  for id in $ids; do
    "$PY" - "$tree/minions.yaml" "$id" "$S/$id-extra.yaml" <<'PYEOF'
import sys, yaml
m = yaml.safe_load(open(sys.argv[1]))[sys.argv[2]] or {}
extra = dict(m.get("config") or {})
extra["grains"] = m.get("grains") or {}
yaml.safe_dump(extra, open(sys.argv[3], "w"), default_flow_style=False)
PYEOF
    MINION_LOG_LEVEL=debug write_minion_conf "$S/minions/$id/conf" "$S/minions/$id/root" "$id" "$MASTER_IP" "$S/$id-extra.yaml"
    # publish/ret ports are the defaults; master_port/publish_port already set by write_minion_conf
    start_daemon minion "$S/minions/$id/conf" "$S/pids/minion-$id" "$S/minions/$id/stdout.log"
  done
  local n; n=$(echo $ids | wc -w)
  local end=$(( $(date +%s) + 120 )) got=0
  while [ "$(date +%s)" -lt "$end" ]; do
    got=$(salt_bin salt -c "$conf" --out=txt -t 10 '*' test.ping 2>/dev/null | grep -c ': True')
    [ "$got" -ge "$n" ] && break; sleep 2
  done
  echo "$got/$n minions up"
  if [ -e "$tree/capture-mine" ]; then  # the minions' mine first; expected/<id>.mine.json is what the master stored
    salt_bin salt -c "$conf" -t 60 '*' mine.update --out txt
    for f in "$S"/master/root/cache/minions/*/mine.p; do
      [ -e "$f" ] || continue
      "$PY" -c 'import sys,json,msgpack; print(json.dumps(msgpack.unpackb(open(sys.argv[1],"rb").read(), raw=False), indent=4, sort_keys=True))' \
        "$f" > "$tree/expected/$(basename "$(dirname "$f")").mine.json"
    done
  fi
  salt_bin salt -c "$conf" -t 60 '*' saltutil.refresh_pillar --out txt
  salt_bin salt -c "$conf" -t 60 '*' pillar.items --out json --static > "$S/all.json"
  "$PY" - "$S/all.json" "$tree/expected" <<'PYEOF'
import sys, json
d = json.load(open(sys.argv[1]))
for mid, p in d.items():
    with open(f"{sys.argv[2]}/{mid}.json", "w") as f:
        json.dump(p, f, indent=4, sort_keys=True); f.write("\n")
    print(mid, "->", len(p) if isinstance(p, dict) else p, "keys")
PYEOF
  if [ -e "$tree/capture-raw" ]; then   # also the minion's in-memory pillar (its own refresh request)
    salt_bin salt -c "$conf" -t 60 '*' pillar.raw --out json --static > "$S/raw.json"
    "$PY" -c 'import sys,json
for mid, p in json.load(open(sys.argv[1])).items():
    open(f"{sys.argv[2]}/{mid}.raw.json", "w").write(json.dumps(p, indent=4, sort_keys=True) + "\n")' "$S/raw.json" "$tree/expected"
  fi
  for f in "$tree"/expected/*.override.input.json; do
    [ -e "$f" ] || continue
    id=$(basename "$f" .override.input.json)
    salt_bin salt -c "$conf" -t 60 "$id" pillar.items pillar="$(cat "$f")" --out json --static \
      | "$PY" -c 'import sys,json; d=json.load(sys.stdin); print(json.dumps(d[sys.argv[1]], indent=4, sort_keys=True))' "$id" \
      > "$tree/expected/$id.override.json"
  done
  kill_pidfiles_parallel "$S"/pids/minion-*
  kill_pidfile "$S/pids/master"
  grep -E '\[(ERROR|CRITICAL) *\]' "$S/master/root/log/master" | grep -v 'asyncio' | sed -E 's/^[0-9-]+ [0-9:,]+ //; s/\]\[[0-9]+\] /] /' \
    | sed "s#$tree/#<tree>/#g" | sort -u > "$tree/expected/master-errors.log"
  [ -s "$tree/expected/master-errors.log" ] || rm -f "$tree/expected/master-errors.log"
}

for t in "$@"; do run_tree "$t"; done
