"""Prints the master's salt/key and salt/presence events as JSON lines {"tag": .., "data": ..}
for SECONDS. usage: python3 events.py SOCK_DIR SECONDS (under salt-ref's common.sh env)."""
import json
import sys
import time

import salt.utils.event

sock_dir, seconds = sys.argv[1], float(sys.argv[2])
bus = salt.utils.event.get_event("master", sock_dir=sock_dir, listen=True)
end = time.monotonic() + seconds
print(json.dumps({"tag": "listening", "data": {}}), flush=True)
while time.monotonic() < end:
    ev = bus.get_event(wait=0.5, full=True)
    if not ev or not ev["tag"].startswith(("salt/key", "salt/presence")):
        continue
    data = {k: v for k, v in ev["data"].items() if k != "_stamp"}
    print(json.dumps({"tag": ev["tag"], "data": data}, sort_keys=True), flush=True)
