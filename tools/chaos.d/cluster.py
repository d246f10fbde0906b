"""The cluster tools/chaos builds: three halite-masters on their own 127.x addresses sharing one
folder, HAProxy in front (its config from `halite-run cluster.haproxy_config`), halite-swarm
minions with --ledger; and the helpers that drive it (health, the CLI, /metrics).
Loopback only: a 127.A.B.0/24 locked as tests/support/loopback.cc locks one.
"""

import ctypes
import errno
import fcntl
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

PREFIX = "chaos-"
HEALTH_PORT = 4510


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def lock_subnet():
    """Owns a 127.A.B.0/24 as tests/support/loopback.cc does (an flock per subnet)."""
    d = "/tmp/halite-test-addresses"
    os.makedirs(d, exist_ok=True)
    start = random.randrange(254 * 256)
    for i in range(254 * 256):
        n = (start + i) % (254 * 256)
        name = f"127.{1 + n // 256}.{n % 256}"
        fd = os.open(os.path.join(d, name), os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return name + ".", fd
        except OSError:
            os.close(fd)
    raise RuntimeError("no free loopback subnet")


def http_status(ip, path="/health", timeout=1.0):
    try:
        with urllib.request.urlopen(f"http://{ip}:{HEALTH_PORT}{path}", timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except Exception:  # noqa: BLE001  refused, timed out (a frozen master)
        return None, ""


def wait_until(pred, timeout, step=0.1):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


class Cluster:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.subnet, self._lock_fd = lock_subnet()
        self.haproxy_ip = self.subnet + "1"
        self.ips = [self.subnet + str(2 + i) for i in range(3)]
        self.procs = {}  # name -> Popen
        self.lock = threading.Lock()
        self.down = set()  # masters killed or frozen right now
        self.busy = {}  # master -> CLI runs in progress there
        self.net = None  # netns.Partitionable when the masters run in namespaces of their own
        self.pg_ip = self.pg_bin = self.pg_dir = None  # --job-cache postgres: start_postgres
        self.disk_mounted = False  # --faults disk: the shared folder is a tmpfs of its own

    def bin(self, name):
        return os.path.join(self.args.bin, name)

    def conf(self, ip):
        return os.path.join(self.work, ip, "master.conf")

    def shared_link(self, ip):
        return os.path.join(self.work, ip, "shared-link")

    def point_shared(self, ip, target):
        """Points master ip's way to the shared folder at `target` (atomic rename)."""
        tmp = self.shared_link(ip) + ".new"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(target, tmp)
        os.replace(tmp, self.shared_link(ip))

    def lose_shared(self, ip):
        """Master ip loses the shared folder (as an unmounted or dead volume: ENOENT)."""
        self.point_shared(ip, os.path.join(self.work, ip, "gone"))

    def restore_shared(self, ip):
        self.point_shared(ip, os.path.join(self.work, "shared"))

    def mount_shared_disk(self, size):
        """Puts the shared folder on a tmpfs of `size` (e.g. "256m") in a mount namespace of
        the tool's own (call before any thread starts: unshare refuses a threaded process), so
        the masters, which inherit it, see a volume that can fill up, and nothing outlives
        the tool."""
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
            err = ctypes.get_errno()
            raise RuntimeError(f"unshare(CLONE_NEWNS): {os.strerror(err)} (--faults disk needs root)")
        subprocess.run(["mount", "--make-rprivate", "/"], check=True)
        shared = os.path.join(self.work, "shared")
        os.makedirs(shared, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "chaos-shared",
                        shared], check=True)
        self.disk_mounted = True

    def fill_shared_disk(self):
        """Fills the shared folder's volume to the last byte (a filler file written until
        ENOSPC); called again while the fault holds, since what the masters free (a removed
        probe or temporary file) they could otherwise write again."""
        path = os.path.join(self.work, "shared", ".chaos-filler")
        with open(path, "ab", buffering=0) as f:
            for chunk in (1 << 20, 4096, 1):
                block = b"\0" * chunk
                try:
                    while True:
                        f.write(block)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise

    def free_shared_disk(self):
        try:
            os.unlink(os.path.join(self.work, "shared", ".chaos-filler"))
        except FileNotFoundError:
            pass

    def start_postgres(self):
        """A PostgreSQL server for the job cache on subnet .5, its data under the work dir
        (initdb and the server run as the postgres user: the server refuses root)."""
        self.pg_ip = self.subnet + "5"
        bins = sorted(d for d in os.listdir("/usr/lib/postgresql")
                      if os.path.isdir(f"/usr/lib/postgresql/{d}/bin"))
        if not bins:
            raise RuntimeError("no PostgreSQL server in /usr/lib/postgresql (tools/bootstrap)")
        self.pg_bin = f"/usr/lib/postgresql/{bins[-1]}/bin"
        self.pg_dir = os.path.join(self.work, "pg")
        os.makedirs(self.pg_dir)
        if os.geteuid() == 0:
            os.chmod(self.work, 0o711)
            subprocess.run(["chown", "postgres:", self.pg_dir], check=True)
        self._as_postgres([f"{self.pg_bin}/initdb", "-D", f"{self.pg_dir}/data", "-U", "halite",
                           "-A", "trust", "-E", "UTF8", "--locale=C"])
        self.pg_ctl("start")

    def _as_postgres(self, cmd):
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(prefix + cmd, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    def pg_ctl(self, action):
        """start (waits until it accepts connections) or stop (fast: connections are cut)."""
        cmd = [f"{self.pg_bin}/pg_ctl", "-D", f"{self.pg_dir}/data", "-w"]
        if action == "start":
            cmd += ["-l", f"{self.pg_dir}/server.log", "-o",
                    f"-c listen_addresses={self.pg_ip} -p 5432 -k {self.pg_dir}", "start"]
        else:
            cmd += ["-m", "fast", "stop"]
        self._as_postgres(cmd)

    def write_configs(self):
        os.makedirs(os.path.join(self.work, "shared"), exist_ok=True)
        for ip in self.ips:
            d = os.path.join(self.work, ip)
            os.makedirs(d, exist_ok=True)
            # Each master reaches the shared folder through a link of its own, so one master
            # alone can lose it (--faults storage).
            self.restore_shared(ip)
            shared = self.shared_link(ip)
            peers = "".join(f"  - {p}\n" for p in self.ips if p != ip)
            with open(self.conf(ip), "w") as f:
                f.write(f"""id: {ip}
interface: {ip}
pki_dir: {d}/pki
sock_dir: {d}/sock
log_file: {d}/master.log
log_level: info
cachedir: {shared}/cache
cluster_id: chaos
cluster_pki_dir: {shared}/pki
cluster_peers:
{peers}auto_accept: true
worker_threads: 2
health_port: {HEALTH_PORT}
timeout: {self.args.timeout}
publish_replay: {'false' if self.args.no_replay else 'true'}
pillar_roots: {{base: [{shared}/pillar]}}
file_roots: {{base: [{shared}/states]}}
""")
                if self.pg_ip:
                    f.write(f"""master_job_cache: postgres
job_cache:
  dsn: 'host={self.pg_ip} port=5432 user=halite dbname=postgres connect_timeout=5'
  schema: chaos
  retry_for_seconds: 600
""")

    def start_master(self, ip):
        out = open(os.path.join(self.work, ip, "stdout.log"), "ab")
        # In its own network namespace for partitions: `ip netns exec` execs the master, so
        # the pid is the master's (kill -9 and SIGSTOP reach it).
        prefix = self.net.exec_prefix(ip) if self.net else []
        p = subprocess.Popen(prefix + [self.bin("halite-master"), "-c", self.conf(ip)], stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[ip] = p

    def healthy(self, ip):
        return http_status(ip)[0] == 200

    def start(self):
        if self.args.job_cache == "postgres":
            self.start_postgres()
        self.start_masters()
        self.start_haproxy()
        self.start_swarm()

    def start_masters(self):
        self.write_configs()
        for ip in self.ips:
            self.start_master(ip)
        if not wait_until(lambda: all(self.healthy(ip) for ip in self.ips), 60):
            raise RuntimeError("masters did not become healthy; see " + self.work)

    def start_haproxy(self, extra_args=()):
        """HAProxy from cluster.haproxy_config on the first master (`extra_args`: more
        key=value arguments, such as stats_socket=PATH)."""
        cfg = subprocess.run([self.bin("halite-run"), "-c", self.conf(self.ips[0]),
                              "cluster.haproxy_config", f"bind={self.haproxy_ip}",
                              "maxconn=4000", *extra_args],
                             check=True, capture_output=True, text=True)
        hcfg = os.path.join(self.work, "haproxy.cfg")
        with open(hcfg, "w") as f:
            f.write(cfg.stdout)
        hlog = open(os.path.join(self.work, "haproxy.log"), "ab")
        self.procs["haproxy"] = subprocess.Popen(["haproxy", "-db", "-f", hcfg], stdout=hlog,
                                                 stderr=subprocess.STDOUT,
                                                 start_new_session=True)
        def haproxy_up():
            with socket.socket() as s:
                s.settimeout(0.5)
                return s.connect_ex((self.haproxy_ip, 4506)) == 0
        if not wait_until(haproxy_up, 20):
            raise RuntimeError("haproxy did not start; see " + hcfg)

    def start_swarm(self):
        swarm = [self.bin("halite-swarm"), "--master", self.haproxy_ip,
                 "--count", str(self.args.minions), "--prefix", PREFIX,
                 "--keys-dir", self.args.keys_dir, "--keysize", str(self.args.keysize),
                 "--forget-master-key", "--ramp", str(self.args.ramp),
                 "--ledger", os.path.join(self.work, "ledger"), "--status-interval", "5",
                 "--log-file", os.path.join(self.work, "swarm.log"), "--log-level", "warn"]
        sout = open(os.path.join(self.work, "swarm.out"), "ab")
        self.procs["swarm"] = subprocess.Popen(swarm, stdout=sout, stderr=subprocess.STDOUT,
                                               start_new_session=True)

    def live_masters(self):
        with self.lock:
            return [ip for ip in self.ips if ip not in self.down]

    def cli(self, ip, fun_args, timeout, target=PREFIX + "*"):
        cmd = [self.bin("halite"), "-c", self.conf(ip), "-t", str(timeout), "--out", "json",
               "--show-jid", target] + fun_args
        return subprocess.run(cmd, capture_output=True, text=True,
                              timeout=max(600, timeout * 10))

    def metrics(self, ip):
        status, body = http_status(ip, "/metrics")
        out = {}
        if status != 200:
            return out
        for line in body.splitlines():
            if line.startswith("#") or " " not in line:
                continue
            name, value = line.rsplit(" ", 1)
            out[name.split("{")[0]] = out.get(name.split("{")[0], 0) + float(value)
        return out

    def stop(self):
        for name, p in list(self.procs.items()):
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    p.terminate()
                except ProcessLookupError:
                    pass
        for name, p in list(self.procs.items()):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.pg_dir and os.path.exists(f"{self.pg_dir}/data/postmaster.pid"):
            try:
                self.pg_ctl("stop")
            except subprocess.CalledProcessError:
                pass


def stock_minion(root, mid, master_ip, salt_src, shim, logfile_level="info"):
    """Writes a stock salt-minion's config under `root` (its own pki, cache, sock and log
    dirs) and returns (argv, env) to start it from the Salt tree `salt_src` with the shims of
    ../shared/protocol/test-vectors.md section 1 in `shim`."""
    for d in ("conf", "pki", "cache", "sock", "log"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    with open(os.path.join(root, "conf", "minion"), "w") as f:
        f.write(f"""id: {mid}
master: {master_ip}
user: root
root_dir: {root}
pki_dir: {root}/pki
cachedir: {root}/cache
sock_dir: {root}/sock
pidfile: {root}/minion.pid
log_file: {root}/log/minion
log_level: warning
log_level_logfile: {logfile_level}
""")
    env = dict(os.environ, PYTHONPATH=f"{salt_src}:{shim}", REFBENCH_LOOPBACK_ONLY="1",
               PATH="/usr/sbin:/usr/bin:/sbin:/bin")
    argv = ["/usr/bin/python3", f"{salt_src}/scripts/salt-minion", "-c",
            os.path.join(root, "conf"), "-l", "warning"]
    return argv, env


def parse_cli(stdout):
    """(jid, printed ids, gave-up ids) from `halite --out json --show-jid`."""
    jid = None
    text = stdout
    if text.startswith("jid: "):
        first, _, text = text.partition("\n")
        jid = first[5:].strip()
    printed, gave_up = set(), set()
    dec = json.JSONDecoder()
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        obj, i = dec.raw_decode(text, i)
        for mid, ret in obj.items():
            # Salt's text, and after it how to look the job up later.
            if isinstance(ret, str) and ret.startswith("Minion did not return. [No response]"):
                gave_up.add(mid)
            else:
                printed.add(mid)
    return jid, printed, gave_up
