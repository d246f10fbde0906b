"""Network namespaces for tools/chaos --faults partition (issue 16).

The layout: one "front" namespace holds HAProxy, the swarm, the tool itself and any storage
server; each master runs in a namespace of its own; the masters reach each other only over a
bridge in a "switch" namespace, which is what a partition cuts:

    front (lo: 127.S.0/24 less the masters)        switch (br0)
      f0 ---- front0 [m0: A0 on lo] back0 ---- b0 --+
      f1 ---- front0 [m1: A1 on lo] back0 ---- b1 --+
      f2 ---- front0 [m2: A2 on lo] back0 ---- b2 --+

Loopback addresses on a veth: every namespace sets route_localnet, and carves its peers' /32s
out of its own 127.0.0.0/8 with unicast routes in the local table (front: each master's address
through its f<i>; a master: the rest of 127.S.0/24 through front0, each other master through
back0). The front namespace does not forward, so a cut bridge port is a real cut: a master
still reaches HAProxy, the minions and the storage, and no other master. A cut detaches the
port from the bridge (packets vanish, as behind a failed switch; nothing is refused).
Everything stays on 127.0.0.0/8 inside namespaces this module made and removes.
"""

import ctypes
import os
import re
import subprocess

NAME_RE = re.compile(r"^hc(\d+)-")


def ip(*args, ns=None, check=True):
    cmd = ["ip"] + (["-n", ns] if ns else []) + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


def sysctl(ns, *settings):
    subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w"] + list(settings),
                   check=True, capture_output=True)


def enter(ns):
    """Moves the calling thread (call it before any other thread starts) into namespace `ns`;
    every thread and process started after it is there too."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            err = ctypes.get_errno()
            raise OSError(err, f"setns {ns}: {os.strerror(err)}")
    finally:
        os.close(fd)


def remove_stale():
    """Namespaces an earlier run left behind (its process is gone)."""
    try:
        names = os.listdir("/run/netns")
    except FileNotFoundError:
        return
    for name in names:
        m = NAME_RE.match(name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            ip("netns", "del", name, check=False)


class Partitionable:
    """front/switch/master namespaces for `subnet` ("127.A.B."), masters at `ips`, the front's
    own address `front_ip` (HAProxy's)."""

    def __init__(self, subnet, ips, front_ip, tag=None):
        tag = tag or str(os.getpid())
        self.subnet, self.ips, self.front_ip = subnet, list(ips), front_ip
        self.front = f"hc{tag}-front"
        self.switch = f"hc{tag}-switch"
        self.masters = [f"hc{tag}-m{i}" for i in range(len(ips))]
        self.cut_now = set()

    def all_namespaces(self):
        return [self.front, self.switch] + self.masters

    def setup(self):
        remove_stale()
        try:
            self._setup()
        except Exception:
            self.teardown()
            raise

    def _setup(self):
        for ns in self.all_namespaces():
            ip("netns", "add", ns)
            ip("link", "set", "lo", "up", ns=ns)
        sysctl(self.front, "net.ipv4.ip_forward=0", "net.ipv4.conf.all.route_localnet=1",
               "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0")
        ip("link", "add", "br0", "type", "bridge", ns=self.switch)
        ip("link", "set", "br0", "up", ns=self.switch)
        for i, (ns, addr) in enumerate(zip(self.masters, self.ips)):
            sysctl(ns, "net.ipv4.ip_forward=0", "net.ipv4.conf.all.route_localnet=1",
                   "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0")
            ip("link", "add", f"f{i}", "netns", self.front, "type", "veth", "peer", "name",
               "front0", "netns", ns)
            ip("link", "add", f"b{i}", "netns", self.switch, "type", "veth", "peer", "name",
               "back0", "netns", ns)
            ip("addr", "add", f"{addr}/32", "dev", "lo", ns=ns)
            for dev in ("front0", "back0"):
                sysctl(ns, f"net.ipv4.conf.{dev}.route_localnet=1",
                       f"net.ipv4.conf.{dev}.rp_filter=0")
                ip("link", "set", dev, "up", ns=ns)
            sysctl(self.front, f"net.ipv4.conf.f{i}.route_localnet=1",
                   f"net.ipv4.conf.f{i}.rp_filter=0")
            ip("link", "set", f"f{i}", "up", ns=self.front)
            ip("link", "set", f"b{i}", "master", "br0", ns=self.switch)
            ip("link", "set", f"b{i}", "up", ns=self.switch)
            # front -> this master; this master -> the front's addresses, then its peers.
            ip("route", "add", "table", "local", f"{addr}/32", "dev", f"f{i}", "src",
               self.front_ip, ns=self.front)
            ip("route", "add", "table", "local", f"{self.subnet}0/24", "dev", "front0", "src",
               addr, ns=ns)
            for other in self.ips:
                if other != addr:
                    ip("route", "add", "table", "local", f"{other}/32", "dev", "back0", "src",
                       addr, ns=ns)

    def exec_prefix(self, ip_addr=None):
        """The command prefix that runs a program in the master `ip_addr`'s namespace (the
        front's without one)."""
        ns = self.front if ip_addr is None else self.masters[self.ips.index(ip_addr)]
        return ["ip", "netns", "exec", ns]

    def cut(self, ip_addr):
        """The master at ip_addr loses the other masters (its bridge port is detached)."""
        i = self.ips.index(ip_addr)
        ip("link", "set", f"b{i}", "nomaster", ns=self.switch)
        self.cut_now.add(ip_addr)

    def heal(self, ip_addr):
        i = self.ips.index(ip_addr)
        ip("link", "set", f"b{i}", "master", "br0", ns=self.switch)
        self.cut_now.discard(ip_addr)

    def teardown(self):
        for ns in self.all_namespaces():
            ip("netns", "del", ns, check=False)
