"""The checks of tools/chaos: halite-swarm's ledger against the job cache and the CLI output.

Ledger lines (src/swarm/ledger.h): "<us>\trun\t<minion>\t<jid>\t<fun>", "<us>\tack\t<minion>\t<jid>",
"<us>\tup\t<minion>", "<us>\tdown\t<minion>", "<us>\tlost\t<count>", and "# ..." headers.
"""

import collections
import datetime


class Ledger:
    def __init__(self):
        self.runs = []  # (t, minion, jid, fun)
        self.acks = []  # (t, minion, jid)
        self.conn = collections.defaultdict(list)  # minion -> [(t, up)]
        self.lost = 0

    def connected_now(self):
        return {m for m, ev in self.conn.items() if ev and ev[-1][1]}

    def acked_jids(self):
        return {jid for _, _, jid in self.acks}

    def intervals(self, minion, end):
        """[(up, down)] of `minion`'s publish subscription; an open one ends at `end`."""
        out, since = [], None
        for t, up in self.conn.get(minion, []):
            if up and since is None:
                since = t
            elif not up and since is not None:
                out.append((since, t))
                since = None
        if since is not None:
            out.append((since, end))
        return out


def read_ledger(path):
    led = Ledger()
    try:
        f = open(path)
    except FileNotFoundError:
        return led
    with f:
        for line in f:
            if line.startswith("#") or not line.endswith("\n"):
                continue  # a header, or a record still being written
            p = line.rstrip("\n").split("\t")
            t = int(p[0]) / 1e6
            if p[1] == "run" and len(p) >= 5:
                led.runs.append((t, p[2], p[3], p[4]))
            elif p[1] == "ack" and len(p) >= 4:
                led.acks.append((t, p[2], p[3]))
            elif p[1] in ("up", "down") and len(p) >= 3:
                led.conn[p[2]].append((t, p[1] == "up"))
            elif p[1] == "lost":
                led.lost += int(p[2])
    return led


def jid_time(jid):
    """A jid is the publishing master's local time, %Y%m%d%H%M%S%f (salt.utils.jid)."""
    return datetime.datetime.strptime(jid[:20], "%Y%m%d%H%M%S%f").timestamp()


def check(led, jobs, faults, stored, ids, timeout, margin, stopped_at, require_acks=False):
    """`stopped_at`: when the swarm was told to stop (its minions' last "down" records).
    `require_acks`: (e), a return that no master acknowledged, is a violation too."""
    violations = []
    if led.lost:
        violations.append(f"ledger: {led.lost} records lost")
    for f in faults:
        if f.get("error"):
            violations.append(f"fault schedule broken: {f['error']}")
    ran = collections.defaultdict(set)
    counts = collections.Counter()
    for _, m, jid, _ in led.runs:
        ran[jid].add(m)
        counts[(m, jid)] += 1
    # (c) no minion ran a jid twice.
    doubles = sorted(k for k, n in counts.items() if n > 1)
    for m, jid in doubles:
        violations.append(f"(c) {m} ran {jid} {counts[(m, jid)]} times")
    # (a) every acknowledged return is in the job cache.
    lost_acks = sorted({(m, jid) for _, m, jid in led.acks if m not in stored.get(jid, set())})
    for m, jid in lost_acks:
        violations.append(f"(a) {m}'s return of {jid} was acknowledged but is not in the job cache")
    acked = collections.defaultdict(set)
    for _, m, jid in led.acks:
        acked[jid].add(m)
    # (e) a job a minion ran whose return no master acknowledged: the minion gave the return
    # up (runs in the last 10 s before the swarm stopped may still have been in flight).
    unacked = sorted({(m, jid) for t, m, jid, _ in led.runs
                      if m not in acked[jid] and t < stopped_at - 10})
    if require_acks:
        for m, jid in unacked[:20]:
            violations.append(f"(e) {m} ran {jid} but no master acknowledged its return")
    end_of_run = max([t for t, *_ in led.runs] + [j["end"] for j in jobs] + [0]) + 3600
    rows = []
    incomplete = missed = refused = 0
    for j in sorted(jobs, key=lambda j: j["k"]):
        row = dict(k=j["k"], fun=j["fun"], master=j["master"], jid=j["jid"], rc=j["rc"])
        rows.append(row)
        if not j["jid"] and any(f["kind"] in ("postgres", "disk") and f["at"] - 1 <= j["start"] <=
                                f.get("restarted", f["at"]) + 1 for f in faults):
            # Published while the job cache was down (or its disk full): refused with the master's error, so
            # nothing ran and nothing was lost (the caller was told).
            refused += 1
            row.update(refused=True)
            continue
        if not j["jid"] or j["rc"] not in (0, 1, 2):
            violations.append(f"(b) job {j['k']} on {j['master']}: the CLI failed (rc {j['rc']}): "
                              f"{j['stderr'].strip()[-200:]}")
            incomplete += 1
            row.update(bad_cli=True)
            continue
        jid = j["jid"]
        cached = stored.get(jid, set())
        # (b) the CLI printed, or named as given up, every minion the job cache has.
        unreported = sorted(cached - j["printed"] - j["gave_up"])
        if unreported:
            incomplete += 1
            violations.append(f"(b) job {j['k']} ({jid}): the CLI neither printed nor named "
                              f"{len(unreported)} stored returns, e.g. {unreported[:3]}")
        wrongly = sorted(j["printed"] - cached)
        if wrongly:
            violations.append(f"(b) job {j['k']} ({jid}): the CLI printed {len(wrongly)} "
                              f"returns the job cache does not have, e.g. {wrongly[:3]}")
        # (d) connected at the publish, or back within the timeout (less the margin): ran it.
        t_pub = jid_time(jid)
        should, excused, away, missed_here = 0, 0, 0, []
        for m in ids:
            spans = led.intervals(m, end_of_run)
            inside = any(u < t_pub + timeout - margin and d > t_pub for u, d in spans)
            # Away at the publish and back within the window: only a replay reaches these.
            if inside and not any(u <= t_pub < d for u, d in spans):
                away += 1
            if inside:
                should += 1
                if m not in ran[jid]:
                    missed_here.append(m)
            elif m not in ran[jid]:
                excused += 1
        if missed_here:
            missed += len(missed_here)
            violations.append(f"(d) job {j['k']} ({jid}): {len(missed_here)} minions connected "
                              f"in its window never ran it, e.g. {missed_here[:3]}")
        row.update(targeted=len(ids), ran=len(ran[jid]), should=should, away=away, excused=excused,
                   missed=len(missed_here), acked=len(acked[jid]), cached=len(cached),
                   printed=len(j["printed"]), gave_up=len(j["gave_up"]),
                   unreported=len(unreported), secs=round(j["end"] - j["start"], 1))
    fault_rows = []
    starts = sorted(f["at"] for f in faults)
    for f in faults:
        # Minions this fault moved: lost their subscription after it, before the next fault.
        until = min([t for t in starts if t > f["at"]] + [f["at"] + 30, stopped_at])
        moved, back = [], []
        for m in ids:
            ev = led.conn.get(m, [])
            downs = [t for t, up in ev if not up and f["at"] <= t < until]
            if not downs:
                continue
            ups = [t for t, up in ev if up and t > downs[0]]
            moved.append(m)
            back.append(ups[0] - f["at"] if ups else None)
        done = [b for b in back if b is not None]
        fault_rows.append(dict(kind=f["kind"], master=f["master"], moved=len(moved),
                               never_back=len(back) - len(done),
                               all_back_s=round(max(done), 1) if done else None,
                               median_back_s=round(sorted(done)[len(done) // 2], 1) if done
                               else None,
                               health_failed_after_s=round(f["health_failed_after"], 1)
                               if f.get("health_failed_after") else None,
                               healthy_again_s=round(f["healthy_again"] - f["at"], 1)
                               if f.get("healthy_again") else None))
    totals = dict(jobs=len(jobs), lost_acknowledged_returns=len(lost_acks),
                  incomplete_cli_results=incomplete, double_executions=len(doubles),
                  missed_jobs=missed, runs=len(led.runs), acks=len(led.acks),
                  unacknowledged_returns=len(unacked), refused_publishes=refused,
                  faults=len(faults), minions_moved=sum(r["moved"] for r in fault_rows),
                  away_at_publish=sum(r.get("away", 0) for r in rows))
    return dict(rows=rows, faults=fault_rows, totals=totals, violations=violations)


def print_table(result, jobs, faults):
    cols = ["k", "fun", "master", "jid", "secs", "ran", "should", "away", "excused", "missed",
            "acked",
            "cached", "printed", "gave_up", "unreported"]
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in result["rows"])) for c in cols} \
        if result["rows"] else {c: len(c) for c in cols}
    print()
    print("  ".join(c.rjust(widths[c]) for c in cols))
    for r in result["rows"]:
        print("  ".join(str(r.get(c, "-")).rjust(widths[c]) for c in cols))
    if result["faults"]:
        print()
        fc = ["kind", "master", "moved", "never_back", "median_back_s", "all_back_s",
              "health_failed_after_s", "healthy_again_s"]
        fw = {c: max(len(c), *(len(str(r.get(c))) for r in result["faults"])) for c in fc}
        print("  ".join(c.rjust(fw[c]) for c in fc))
        for r in result["faults"]:
            print("  ".join(str(r.get(c)).rjust(fw[c]) for c in fc))
    print()
    t = result["totals"]
    print(f"jobs {t['jobs']}, faults {t['faults']} (minions moved {t['minions_moved']}), "
          f"runs {t['runs']}, acks {t['acks']}, minions away at a publish and back in time "
          f"{t['away_at_publish']}, publishes refused while the job cache was down "
          f"{t['refused_publishes']}")
    print(f"(a) lost acknowledged returns: {t['lost_acknowledged_returns']}   "
          f"(b) incomplete CLI results: {t['incomplete_cli_results']}   "
          f"(c) double executions: {t['double_executions']}   "
          f"(d) missed jobs: {t['missed_jobs']}   "
          f"(e) returns no master acknowledged: {t['unacknowledged_returns']}")
    for v in result["violations"][:40]:
        print("VIOLATION " + v)
    if len(result["violations"]) > 40:
        print(f"... and {len(result['violations']) - 40} more")
    print("RESULT: " + ("FAIL" if result["violations"] else "PASS"))
