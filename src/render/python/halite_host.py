"""Frames on the pipe to halite-master, and the calls a template makes back to the master
mid-render (host_call). Part of halite-render (halite_render.py)."""

import datetime
import struct
import msgpack

from halite_common import NotAllowed, RenderError


def _default(obj):
    if isinstance(obj, (set, tuple)):
        return list(obj)
    if isinstance(obj, (datetime.date, datetime.datetime)):
        return obj.isoformat()
    return str(obj)


def _read_exact(stream, n):
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


_HOST = {}


def _write_frame(stream, obj):
    payload = msgpack.packb(obj, use_bin_type=True, default=_default)
    stream.write(struct.pack(">I", len(payload)) + payload)


def host_call(name, args):
    """Asks the master (the pool that sent this request) and waits for its answer."""
    stdin, stdout = _HOST.get("in"), _HOST.get("out")
    if stdin is None:
        raise NotAllowed("salt['%s'] needs the master" % name)
    _write_frame(stdout, {"call": name, "args": args})
    header = _read_exact(stdin, 4)
    if header is None:
        raise RenderError("the master went away")
    (size,) = struct.unpack(">I", header)
    body = _read_exact(stdin, size)
    if body is None:
        raise RenderError("the master went away")
    answer = msgpack.unpackb(body, raw=False, strict_map_key=False)
    if not answer.get("ok"):
        raise RenderError("%s: %s" % (name, answer.get("error")))
    return answer.get("data")
