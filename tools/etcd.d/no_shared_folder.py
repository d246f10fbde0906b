#!/usr/bin/python3
"""By hand (issue 17's acceptance): a halite cluster with no shared folder at all.

etcd over TLS (certificates made here with openssl) holds the members, minion keys, the cluster
key pair, the AES key, session keys and quorum views; PostgreSQL holds the returns; each master
has its own pki_dir and cachedir. Three masters behind HAProxy, minions through HAProxy (stock
salt-minions with --salt-src, halite-minions otherwise), then a 4th master joins live, HAProxy
follows (cluster.haproxy_sync), new minions land on it, one minion moves to it with the master
key it pinned, and a job published on it is complete in jobs.lookup_jid on all four; every
master holds every minion's grains (the minion data cache in PostgreSQL), and a grain target
published on one master reaches the minions of the others.

  tools/etcd.d/no_shared_folder.py [--bin build/release/src/apps] [--salt-src /tmp/ref/salt3007]
Prints a transcript; exit 0 when every check holds. Loopback only (a locked 127.A.B.0/24).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "chaos.d"))
from cluster import Cluster, http_status, log, stock_minion, wait_until  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = ["m1", "m2", "m3", "m4"]


def sh(cmd, show=True, **kw):
    if show:
        shown = [os.path.basename(cmd[0])] + [x if " " not in x else repr(x) for x in cmd[1:]]
        print("$ " + " ".join(shown), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if show:
        print(r.stdout + r.stderr, end="", flush=True)
    return r


class EtcdCluster(Cluster):
    def __init__(self, args, work):
        super().__init__(args, work)
        self.ips = [self.subnet + str(n) for n in (2, 3, 4, 6)]  # .5 PostgreSQL, .7 etcd
        self.etcd_ip = self.subnet + "7"
        self.names = dict(zip(self.ips, NAMES))
        self.socket = os.path.join(work, "haproxy.sock")

    def make_pki(self):
        d = os.path.join(self.work, "tls")
        os.makedirs(d)
        self.tls = d

        def ssl(*a):
            subprocess.run(["openssl", *a], check=True, capture_output=True, cwd=d)
        with open(os.path.join(d, "server.ext"), "w") as f:
            f.write(f"subjectAltName=IP:{self.etcd_ip}\nextendedKeyUsage=serverAuth,clientAuth\n")
        with open(os.path.join(d, "client.ext"), "w") as f:
            f.write("extendedKeyUsage=clientAuth\n")
        ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.pem", "-days", "2", "-subj", "/CN=halite demo CA")
        for name in ("server", "client"):
            ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
                f"{name}.csr", "-subj", f"/CN=halite demo {name}")
            ssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile",
                f"{name}.ext")

    def start_etcd(self):
        self.make_pki()
        t = self.tls
        url = f"https://{self.etcd_ip}:2379"
        out = open(os.path.join(self.work, "etcd.log"), "ab")
        self.procs["etcd"] = subprocess.Popen(
            ["etcd", "--name", "e1", "--data-dir", os.path.join(self.work, "etcd"),
             "--listen-client-urls", url, "--advertise-client-urls", url,
             "--listen-peer-urls", f"http://{self.etcd_ip}:2380",
             "--initial-advertise-peer-urls", f"http://{self.etcd_ip}:2380",
             "--initial-cluster", f"e1=http://{self.etcd_ip}:2380",
             f"--cert-file={t}/server.pem", f"--key-file={t}/server.key",
             f"--trusted-ca-file={t}/ca.pem", "--client-cert-auth",
             f"--listen-metrics-urls=http://{self.etcd_ip}:2381", "--log-level", "warn"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

        def up():
            try:
                import urllib.request
                with urllib.request.urlopen(f"http://{self.etcd_ip}:2381/health", timeout=1) as r:
                    return b'"true"' in r.read()
            except Exception:  # noqa: BLE001
                return False
        if not wait_until(up, 60, 0.2):
            raise RuntimeError("etcd did not start; see etcd.log")

    def write_config(self, ip):
        d = os.path.join(self.work, self.names[ip])
        os.makedirs(os.path.join(d, "pillar"), exist_ok=True)
        os.makedirs(os.path.join(d, "states"), exist_ok=True)
        t = self.tls
        with open(self.conf(ip), "w") as f:
            f.write(f"""id: {self.names[ip]}
interface: {ip}
pki_dir: {d}/pki
cachedir: {d}/cache
sock_dir: {d}/sock
log_file: {d}/master.log
log_level: info
cluster_id: demo
cluster_backend: etcd
etcd_endpoints: [https://{self.etcd_ip}:2379]
etcd_cacert: {t}/ca.pem
etcd_cert: {t}/client.pem
etcd_key: {t}/client.key
master_job_cache: postgres
job_cache:
  dsn: 'host={self.pg_ip} port=5432 user=halite dbname=postgres connect_timeout=5'
  schema: demo
auto_accept: true
worker_threads: 2
health_port: 4510
pillar_roots: {{base: [{d}/pillar]}}
file_roots: {{base: [{d}/states]}}
""")

    def conf(self, ip):
        return os.path.join(self.work, self.names[ip], "master.conf")

    def start_master(self, ip):
        self.write_config(ip)
        out = open(os.path.join(self.work, self.names[ip], "stdout.log"), "ab")
        self.procs[ip] = subprocess.Popen([self.bin("halite-master"), "-c", self.conf(ip)],
                                          stdout=out, stderr=subprocess.STDOUT,
                                          start_new_session=True)

    def start_haproxy_with_socket(self):
        self.start_haproxy([f"stats_socket={self.socket}"])
        if not wait_until(lambda: os.path.exists(self.socket), 20):
            raise RuntimeError("haproxy made no admin socket")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/src/apps"))
    ap.add_argument("--salt-src", default="", help="stock salt-minions from this Salt tree")
    ap.add_argument("--shim", default="/tmp/ref/pyshim")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    args = types.SimpleNamespace(bin=a.bin, timeout=30, no_replay=False, job_cache="postgres")
    work = tempfile.mkdtemp(prefix="halite-etcd-demo.")
    os.chmod(work, 0o711)
    c = EtcdCluster(args, work)
    ok = False
    minions = []
    checks = []

    def check(what, good):
        checks.append((what, good))
        log(("ok: " if good else "FAILED: ") + what)

    def start_minion(mid, master_ip):
        root = os.path.join(work, "minion-" + mid)
        if a.salt_src:
            cmd, env = stock_minion(root, mid, master_ip, a.salt_src, a.shim)
        else:
            os.makedirs(root, exist_ok=True)
            with open(os.path.join(root, "minion.conf"), "w") as f:
                f.write(f"id: {mid}\nmaster: {master_ip}\npki_dir: {root}/pki\n"
                        f"cachedir: {root}/cache\nsock_dir: {root}/sock\n"
                        f"acceptance_wait_time: 1\n")
            env = None
            cmd = [c.bin("halite-minion"), "-c", os.path.join(root, "minion.conf")]
        out = open(os.path.join(root, "stdout.log"), "ab")
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        c.procs["minion-" + mid] = p
        return root

    def answering(master_ip, n):
        def pred():
            r = subprocess.run([c.bin("halite"), "-c", c.conf(master_ip), "-t", "10", "--out",
                                "json", "--static", "web*", "test.ping"],
                               capture_output=True, text=True)
            try:
                return len(json.loads(r.stdout or "{}")) >= n
            except ValueError:
                return False
        return wait_until(pred, 120, 2)

    try:
        c.start_postgres()
        c.start_etcd()
        for ip in c.ips[:3]:
            c.start_master(ip)
        if not wait_until(lambda: all(c.healthy(ip) for ip in c.ips[:3]), 60):
            raise RuntimeError("masters did not become healthy")
        c.start_haproxy_with_socket()
        log(f"etcd (TLS) {c.etcd_ip}, PostgreSQL {c.pg_ip}, masters "
            + ", ".join(f"{c.names[ip]} {ip}" for ip in c.ips[:3])
            + f" behind haproxy {c.haproxy_ip}; no folder is shared")
        if a.salt_src:
            ver = subprocess.run(["/usr/bin/python3", f"{a.salt_src}/scripts/salt-minion",
                                  "--version"], env=dict(os.environ,
                                  PYTHONPATH=f"{a.salt_src}:{a.shim}"),
                                 capture_output=True, text=True).stdout.strip()
            log(f"minions: stock {ver}")
        for mid in ("web1", "web2", "web3"):
            minions.append(start_minion(mid, c.haproxy_ip))
        check("3 minions answer test.ping published on m1", answering(c.ips[0], 3))
        sh([c.bin("halite-run"), "-c", c.conf(c.ips[0]), "cluster.members"])

        m4 = c.ips[3]
        log("m4 joins with nothing but etcd's address and its name")
        c.start_master(m4)
        check("m4 healthy", wait_until(lambda: c.healthy(m4), 60))
        sh([c.bin("halite-run"), "-c", c.conf(c.ips[1]), "cluster.haproxy_sync",
            f"socket={c.socket}"])
        for mid in ("web4", "web5"):
            minions.append(start_minion(mid, c.haproxy_ip))
        # web1 moves to m4 directly, with the master key it pinned on its first master.
        pinned = os.path.join(work, "minion-web1", "pki", "minion_master.pub")
        check("web1 pinned a master key", os.path.exists(pinned))
        p = c.procs.pop("minion-web1")
        p.terminate()
        p.wait(timeout=30)
        start_minion("web1", m4)
        check("5 minions answer test.ping published on m4", answering(m4, 5))

        def on_m4():
            status, body = http_status(m4, "/metrics")
            for line in body.splitlines():
                if line.startswith("halite_connected_minions{"):
                    return float(line.rsplit(" ", 1)[1])
            return 0
        wait_until(lambda: on_m4() >= 2, 30, 0.5)
        n4 = on_m4()
        check(f"m4 holds {n4:.0f} minions' publish connections", n4 >= 2)
        r = sh([c.bin("halite"), "-c", c.conf(m4), "--show-jid", "web*", "test.echo",
                "no-shared-folder"])
        jid = r.stdout.splitlines()[0][5:].strip() if r.stdout.startswith("jid: ") else ""
        for ip in c.ips:
            lr = sh([c.bin("halite-run"), "-c", c.conf(ip), "--out", "json",
                     "jobs.lookup_jid", jid], show=(ip == c.ips[0]))
            try:
                got = sorted(json.loads(lr.stdout).keys())
            except ValueError:
                got = []
            check(f"jobs.lookup_jid on {c.names[ip]}: {len(got)} returns {got}", len(got) == 5)
        # The minion data cache is in PostgreSQL (cache: postgres, the default here): every
        # master has every minion's grains, whichever master the minion signed in on, and a
        # grain target published on any master reaches them all.
        for ip in c.ips:
            def grains_on(ip=ip):
                gr = sh([c.bin("halite-run"), "-c", c.conf(ip), "--out", "json",
                         "cache.grains", "tgt=web*"], show=False)
                try:
                    return sorted(json.loads(gr.stdout).keys())
                except ValueError:
                    return []
            wait_until(lambda: len(grains_on()) == 5, 30, 0.5)
            got = grains_on()
            check(f"cache.grains on {c.names[ip]}: {len(got)} minions {got}", len(got) == 5)
        kernel = "Linux"
        r = sh([c.bin("halite"), "-c", c.conf(c.ips[2]), "-G", f"kernel:{kernel}", "test.echo",
                "by-grain"])
        answered = sorted(line[:-1] for line in r.stdout.splitlines()
                          if line.startswith("web") and line.endswith(":"))
        check(f"-G kernel:{kernel} published on m3 reached {answered}", len(answered) == 5)
        shared = [p for p in ("shared",) if os.path.exists(os.path.join(work, p))]
        check("no shared folder exists", not shared)
        ok = all(g for _, g in checks)
        print("RESULT: " + ("PASS" if ok else "FAIL"))
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"no_shared_folder: {e}", file=sys.stderr)
    finally:
        c.stop()
        if a.keep or not ok:
            log(f"files kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
