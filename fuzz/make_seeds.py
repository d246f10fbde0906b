#!/usr/bin/env python3
"""Writes the fuzz seed corpora: make_seeds.py VECTORS_DIR CONF_DIR OUT_DIR.

Every hex field of tests/data/vectors/*.json (and {"hex": ...} values) becomes bytes; JSON
objects become msgpack (Salt's wire packing: str for text, bin for {"hex": ...}). Each target
gets the seeds it can use, in OUT_DIR/<target>/, named by content hash. Nothing here is
committed: the corpora are rebuilt from the vectors.
"""
import base64
import glob
import hashlib
import json
import os
import re
import struct
import sys


def pack(v, bin_type=False):
    """A minimal msgpack packer (enough for the vectors); bytes are bin only if bin_type."""
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        if v >= 0:
            return b"\xcf" + struct.pack(">Q", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        return pack_raw(v.encode(), False, bin_type)
    if isinstance(v, bytes):
        return pack_raw(v, True, bin_type)
    if isinstance(v, list):
        n = len(v)
        head = bytes([0x90 | n]) if n < 16 else b"\xdc" + struct.pack(">H", n)
        return head + b"".join(pack(x, bin_type) for x in v)
    if isinstance(v, dict):
        n = len(v)
        head = bytes([0x80 | n]) if n < 16 else b"\xde" + struct.pack(">H", n)
        return head + b"".join(pack(k, bin_type) + pack(x, bin_type) for k, x in v.items())
    raise TypeError(type(v))


def pack_raw(b, is_bin, bin_type):
    n = len(b)
    if is_bin and bin_type:
        if n < 256:
            return b"\xc4" + bytes([n]) + b
        return b"\xc5" + struct.pack(">H", n) + b
    if n < 32:
        return bytes([0xA0 | n]) + b
    if n < 65536:
        return b"\xda" + struct.pack(">H", n) + b
    return b"\xdb" + struct.pack(">I", n) + b


def unhex(s):
    try:
        return bytes.fromhex(s)
    except ValueError:
        return None


def decode_hex_objects(v):
    """{"hex": "..."} -> bytes, recursively."""
    if isinstance(v, dict):
        if set(v) == {"hex"} and isinstance(v["hex"], str) and unhex(v["hex"]) is not None:
            return unhex(v["hex"])
        return {k: decode_hex_objects(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode_hex_objects(x) for x in v]
    return v


def walk(v, path=""):
    """Yields (path, key, value) for every node."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield path, k, x
            yield from walk(x, path + "." + k)
    elif isinstance(v, list):
        for x in v:
            yield path, "[]", x
            yield from walk(x, path + "[]")


class Seeds:
    def __init__(self, out):
        self.out = out
        self.count = {}

    def add(self, target, data):
        if isinstance(data, str):
            data = data.encode()
        d = os.path.join(self.out, target)
        os.makedirs(d, exist_ok=True)
        name = hashlib.sha1(data).hexdigest()
        p = os.path.join(d, name)
        if not os.path.exists(p):
            with open(p, "wb") as f:
                f.write(data)
            self.count[target] = self.count.get(target, 0) + 1


COMMANDS = ["_return", "_pillar", "_minion_event", "_mine", "_mine_get", "_mine_delete",
            "_mine_flush", "_file_envs", "_file_find", "_file_hash", "_file_hash_and_stat",
            "_file_list", "_file_list_emptydirs", "_dir_list", "_symlink_list", "_serve_file",
            "_file_recv", "_master_opts", "_master_tops", "_auth", "ping", "publish",
            "_halite_status", "_halite_list_jobs", "_halite_lookup_jid", "_halite_probe",
            "_halite_cluster_status", "nosuch"]

TARGETS = ["web1.example.com", "web*", "*", "web[0-9].example.com", "minion1,web1.example.com",
           "web1.example.com", "os:Debian", "roles:web", "nested:a:b:c", "os:Deb*",
           "os_family:^Deb.*$", "G@os:Debian and web*", "L@web1.example.com,db1 or E@db.*",
           "not G@os:RedHat and ( P@roles:w.b or I@foo:bar )", "E@^web[0-9]+\\.", "(a|aa)*c",
           "G@ipv4:10.0.0.* and not L@x", "web1.example.com and ( * or G@num_cpus:2 )"]

HTTP = [
    "GET /health HTTP/1.1\r\nHost: 127.0.0.1:4510\r\nUser-Agent: HAProxy\r\n\r\n",
    "GET /metrics HTTP/1.0\r\n\r\n",
    "HEAD / HTTP/1.1\r\nConnection: close\r\n\r\n",
    "POST /health HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
    "GET /health HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "OPTIONS * HTTP/1.1\r\nHost: x\r\nX-A: b\r\n X-folded: c\r\n\r\n",
]

# api_body_fuzz: byte 0 picks the content type (0 JSON, 1 YAML, 2 text/yaml, 3 text/plain,
# 4 form), as salt-api clients (pepper, SaltGUI, curl) send them.
API_BODIES = [
    (0, '{"username": "saltdev", "password": "saltdev", "eauth": "pam"}'),
    (0, '[{"client": "local", "tgt": "*", "fun": "test.arg", "arg": [1, "a", {"k": [true, null]}],'
        ' "kwarg": {"x": 1.5}, "tgt_type": "glob"}]'),
    (0, '{"client": "runner", "fun": "jobs.lookup_jid", "jid": "20250101120000123456"}'),
    (1, "- client: local\n  tgt: '*'\n  fun: test.ping\n  arg: [1, {a: b}]\n"),
    (2, "username: u\npassword: p\neauth: auto\n"),
    (3, '{"client": "wheel", "fun": "key.list_all"}'),
    (3, "plain text body"),
    (4, "username=saltdev&password=saltdev&eauth=pam"),
    (4, "client=local&tgt=%2A&fun=test.kwarg&arg=one%3D1&arg=2&arg=%5B1%2C+2%5D&kwarg=%7Ba%3A+b%7D"
        "&username=a+b"),
    (4, "a=1&a=2&b=&=c&d&%zz=%41"),
]

CONFIGS = [
    "", "interface: 127.0.0.1\nret_port: 4506\n", "file_roots:\n  base:\n    - /srv/salt\n",
    "cluster_id: c\ncluster_peers: [10.0.0.2, 10.0.0.3]\ncluster_pki_dir: /p\n",
    "master_job_cache: postgres\njob_cache:\n  dsn: host=x\n  pool_size: 4\n",
    "keep_jobs: 24\nkeep_jobs_seconds: 0x10\nauto_accept: yes\nopen_mode: 'false'\n",
    "master: [m1:4506, 'm2']\nid: minion1\nmaster_type: failover\n",
    "a: x\nb: true\nc: 12\nd: 65535\ne: 3600\nf: [x, y]\ng: {base: [/a]}\nh: {k: v}\ni: 007\n",
    "&a [*a]\n", "? [a, b]\n: c\n", "!!binary aGVsbG8=\n", "key: |\n  text\n  more\n",
]


def main():
    vectors, conf, out = sys.argv[1:4]
    seeds = Seeds(out)
    blobs = []        # every hex field, as bytes
    objects = []      # every JSON object, hex objects decoded
    for path in sorted(glob.glob(os.path.join(vectors, "*.json"))):
        with open(path) as f:
            doc = json.load(f)
        for parent, key, value in walk(doc):
            if isinstance(value, str) and "hex" in key and unhex(value):
                blobs.append((parent + "." + key, unhex(value)))
            if isinstance(value, dict) and isinstance(decode_hex_objects(value), dict):
                objects.append((parent + "." + key, decode_hex_objects(value)))

    # rsa_pem_fuzz: byte 0 picks the armour; 0 = SPKI around the DER of every public key PEM
    # in the vectors, 1 = PKCS#1 around its inner RSAPublicKey, 2 = the PEM text as it is.
    pem_re = re.compile(r"-----BEGIN (RSA )?PUBLIC KEY-----[^-]+-----END (RSA )?PUBLIC KEY-----")
    for path in sorted(glob.glob(os.path.join(vectors, "*.json"))):
        with open(path) as f:
            text = f.read().replace("\\n", "\n")
        for m in pem_re.finditer(text):
            pem = m.group(0)
            body = "".join(pem.split("-----")[2].split())
            try:
                der = base64.b64decode(body, validate=True)
            except ValueError:
                continue
            seeds.add("rsa_pem_fuzz", (b"\x01" if m.group(1) else b"\x00") + der)
            seeds.add("rsa_pem_fuzz", b"\x02" + pem.encode())
    for name, b in blobs:
        seeds.add("msgpack_fuzz", b)
        seeds.add("request_fuzz", b)
        seeds.add("peer_frame_fuzz", b)
        if "ciphertext" in name or "zmq_frame" in name or "reply_wire" in name:
            seeds.add("crypticle_fuzz", b)
            if len(b) > 48:
                seeds.add("crypticle_plain_fuzz", b"\x00" + b[:-32])
        if "plaintext_hex" in name or "plain_hex" in name:
            seeds.add("crypticle_plain_fuzz", b"\x01" + b)
        if "packed" in name or "frame" in name:
            seeds.add("event_fuzz", b)
    for name, o in objects[:400]:
        for bin_type in (False, True):
            b = pack(o, bin_type)
            seeds.add("msgpack_fuzz", b)
            seeds.add("crypticle_plain_fuzz", b"\x03" + b)
        if isinstance(o.get("tag"), str) and isinstance(o.get("data"), dict):
            seeds.add("event_fuzz", o["tag"].encode() + b"\n\n" + pack(o["data"], True))
        if "enc" in o and "load" in o:
            seeds.add("request_fuzz", pack(o))
        if isinstance(o.get("cmd"), str) or name.endswith("plain_load_before_encryption"):
            for flags in (0, 3):
                seeds.add("request_aes_fuzz", bytes([flags]) + pack(o))
        if isinstance(o.get("tgt"), str):
            for t in range(6):
                seeds.add("target_fuzz", bytes([t, 0]) + o["tgt"].encode())

    for i, cmd in enumerate(COMMANDS):
        load = {"cmd": cmd, "id": "minion1", "jid": "20250101120000123456", "fun": "test.ping",
                "return": True, "retcode": 0, "tag": "salt/custom/x", "data": {"a": 1},
                "events": [{"tag": "t", "data": {}}], "saltenv": "base", "path": "hello.txt",
                "loc": 0, "grains": {"os": "Debian"}, "tgt": "*", "tgt_type": "glob",
                "expr_form": "glob", "fun_args": [], "clear": False, "key": "x"}
        seeds.add("request_aes_fuzz", bytes([i % 4]) + pack(load))
        seeds.add("request_fuzz", pack({"enc": "clear", "load": load, "version": 3}))
        seeds.add("msgpack_fuzz", pack(load))
    for i, tgt in enumerate(TARGETS):
        for t in range(8):
            seeds.add("target_fuzz", bytes([t, i]) + tgt.encode())
        seeds.add("target_fuzz", bytes([2, 4]) + b"db1\n" + tgt.encode())

    frames = [
        {"seq": 1, "epoch": 77, "low": 1, "kind": "event", "payload": b"salt/x\n\n\x80"},
        {"seq": 9, "epoch": 2**64 - 1, "low": 3, "kind": "publish", "payload": pack({"ts": 1})},
        {"hb": True, "epoch": 77, "low": 1, "next": 5},
        {"ack": 4, "epoch": 77}, {"ack": 4, "epoch": 77, "resend": True},
    ]
    for fr in frames:
        seeds.add("peer_frame_fuzz", pack(fr, True))
    for h in HTTP:
        seeds.add("health_http_fuzz", h)
    # A libzmq SUB's greeting (ZMTP 3.1, NULL), its READY, then subscriptions and a PING.
    greeting = b"\xff" + b"\x00" * 8 + b"\x7f\x03\x01" + b"NULL".ljust(20, b"\x00") + b"\x00" * 32

    def command(name, body):
        b = bytes([len(name)]) + name + body
        return bytes([4, len(b)]) + b

    ready = command(b"READY", b"\x0bSocket-Type" + (3).to_bytes(4, "big") + b"SUB")
    subs = b"\x00\x01\x01" + b"\x00\x0a\x01broadcast" + b"\x00\x01\x00"
    subs += command(b"SUBSCRIBE", b"t") + command(b"PING", b"\x00\x0actx")
    for chunk in (0, 1, 7, 64):
        seeds.add("zmtp_fuzz", bytes([chunk]) + greeting + ready + subs)
    seeds.add("zmtp_fuzz", b"\x00" + greeting + command(b"READY", b""))
    for c in CONFIGS:
        seeds.add("config_fuzz", c)
    for t, body in API_BODIES:
        seeds.add("api_body_fuzz", bytes([t]) + body.encode())
    for path in sorted(glob.glob(os.path.join(conf, "*"))):
        with open(path, "rb") as f:
            seeds.add("config_fuzz", f.read())
    seeds.add("crypticle_fuzz", b"\x00" * 64)
    print("fuzz seeds: " + ", ".join(f"{t} {n}" for t, n in sorted(seeds.count.items())))


if __name__ == "__main__":
    main()
