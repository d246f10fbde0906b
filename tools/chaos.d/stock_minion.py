#!/usr/bin/python3
"""By hand, never in CI (needs a Salt source tree): a STOCK salt-minion behind HAProxy in front
of three halite-masters, against the publish replay (issue 16, docs/failure-modes.md).

1. The minion's master is killed with -9 and a job is published on another master at once,
   while the minion's publish connection is still moving: the job must reach it when it is
   back, and run once (the replay).
2. A new subscriber makes the masters replay that job while it is still live. The replay
   leaves out minions whose return a master saw (target "( tgt ) and not L@<them>"), so the
   minion receives it and its own matcher drops it; a minion whose return was not seen yet
   would get it and drop it by Salt's jid_queue (minion_jid_queue_hwm). Either way it must not
   run twice.
The job appends a line to a file on each run, so the file counts the executions.

  tools/chaos.d/stock_minion.py [--bin build/asan/src/apps] [--salt-src /tmp/ref/salt3007]
Prints a transcript; exit 0 when both hold.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster, log, parse_cli, stock_minion, wait_until  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sh(cmd, **kw):
    shown = [os.path.basename(cmd[0])] + [x if " " not in x else repr(x) for x in cmd[1:]]
    print("$ " + " ".join(shown), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    print(r.stdout + r.stderr, end="", flush=True)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/asan/src/apps"))
    ap.add_argument("--salt-src", default="/tmp/ref/salt3007")
    ap.add_argument("--shim", default="/tmp/ref/pyshim")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    args = types.SimpleNamespace(bin=a.bin, timeout=60, no_replay=False, minions=0,
                                 keys_dir="", keysize=2048, ramp=0)
    work = tempfile.mkdtemp(prefix="halite-stock-minion.")
    c = Cluster(args, work)
    ok = False
    try:
        c.start_masters()
        c.start_haproxy()
        log(f"halite-masters {' '.join(c.ips)} behind haproxy {c.haproxy_ip}")
        root = os.path.join(work, "stock-1")
        # Debug in its log file: the check below reads "PubChannel received" lines.
        argv, env = stock_minion(root, "stock-1", c.haproxy_ip, a.salt_src, a.shim, "debug")
        out = open(os.path.join(root, "stdout.log"), "ab")
        minion = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        c.procs["stock-1"] = minion
        ver = subprocess.run(["/usr/bin/python3", f"{a.salt_src}/scripts/salt-minion",
                              "--version"], env=env, capture_output=True, text=True).stdout
        log(f"stock minion: {ver.strip()}")

        def pings():
            r = c.cli(c.ips[0], ["test.ping"], 10, target="stock-1")
            return "stock-1" in parse_cli(r.stdout)[1]
        if not wait_until(pings, 120, step=2):
            raise RuntimeError("the stock minion never answered")
        # Which master holds its publish connection (halite_connected_minions).
        def holder():
            for ip in c.ips:
                if c.metrics(ip).get("halite_connected_minions", 0) >= 1:
                    return ip
            return None
        if not wait_until(lambda: holder() is not None, 20):
            raise RuntimeError("no master reports the minion's publish connection")
        victim = holder()
        other = next(ip for ip in c.ips if ip != victim)
        runs = os.path.join(work, "runs")
        log(f"stock-1's publish connection is on {victim}; kill -9 it, publish on {other}")
        os.kill(c.procs[victim].pid, signal.SIGKILL)
        c.procs[victim].wait()
        c.down.add(victim)
        t0 = time.time()
        r = sh([c.bin("halite"), "-c", c.conf(other), "-t", "40", "--show-jid", "stock-1",
                "cmd.run", f"echo ran >> {runs}; cat {runs} | wc -l", "python_shell=True"])
        took = time.time() - t0
        first = r.stdout.splitlines()[0] if r.stdout else ""
        jid = first[5:].strip() if first.startswith("jid: ") else None
        n1 = open(runs).read().count("ran") if os.path.exists(runs) else 0
        log(f"job {jid} returned after {took:.1f} s; it ran {n1} time(s)")
        replayed = {ip: c.metrics(ip).get("halite_publishes_replayed_total", 0)
                    for ip in c.ips if ip != victim}
        log(f"publishes replayed so far: {replayed}")
        # 2: a new subscriber (halite-swarm, one minion) makes every live master replay the
        # job; stock-1 already ran it and must drop it.
        before = sum(replayed.values())
        sw = subprocess.Popen([c.bin("halite-swarm"), "--master", c.haproxy_ip, "--count", "3",
                               "--prefix", "late-", "--keys-dir", os.path.join(work, "late"),
                               "--ramp", "0"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
        c.procs["late"] = sw

        def replayed_again():
            return sum(c.metrics(ip).get("halite_publishes_replayed_total", 0)
                       for ip in c.ips if ip != victim) > before
        if not wait_until(replayed_again, 60, step=0.5):
            raise RuntimeError("the late subscribers caused no replay")
        # Proof the minion got the replayed publish: Salt logs each publish it receives
        # ("PubChannel received"), then matches its target.
        log_path = os.path.join(root, "log", "minion")

        def received(text):
            return sum(1 for line in text.splitlines()
                       if "PubChannel received" in line and f"'jid': '{jid}'" in line)

        def seen_twice():
            text = open(log_path).read() if os.path.exists(log_path) else ""
            return received(text) >= 2
        wait_until(seen_twice, 20, step=0.5)
        text = open(log_path).read()
        n2 = open(runs).read().count("ran")
        not_targeted = sum(1 for line in text.splitlines()
                           if "compound_match" in line and f"not L@stock-1" in line
                           and "=> " in line and line.rstrip().endswith('not True"'))
        log(f"after the replay: the minion received jid {jid} {received(text)} times, "
            f"logged 'Executing command' {text.count(f'with jid {jid}')} time(s), matched a "
            f"replay target that leaves it out {not_targeted} time(s); the job ran {n2} time(s)")
        ok = n1 == 1 and n2 == 1 and received(text) >= 2 and "stock-1" in r.stdout
        print("RESULT: " + ("PASS" if ok else "FAIL"))
    except RuntimeError as e:
        print(f"stock_minion: {e}", file=sys.stderr)
    finally:
        c.stop()
        if a.keep or not ok:
            log(f"files kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
