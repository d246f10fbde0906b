"""A stand-in for systemd's notify socket: receives sd_notify datagrams on a unix socket and
appends one line per assignment to a log, `PID<TAB>SECONDS<TAB>KEY=VALUE`, with the sender's
pid (SO_PASSCRED, as systemd checks NotifyAccess=main) and a monotonic timestamp.

usage: /usr/bin/python3 notify_listener.py SOCKET LOG   (runs until killed)
"""
import os
import socket
import struct
import sys
import time


def main():
    path, log_path = sys.argv[1], sys.argv[2]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    if os.path.exists(path):
        os.unlink(path)
    sock.bind(path)
    # The daemon may run as another user (User= of the unit): it must be able to send.
    os.chmod(path, 0o666)
    with open(log_path, "a", buffering=1) as log:
        log.write("0\t%.3f\tLISTENING=1\n" % time.monotonic())
        while True:
            data, ancdata, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(12))
            pid = 0
            for level, kind, payload in ancdata:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("iII", payload[:12])[0]
            now = time.monotonic()
            for line in data.decode("utf-8", "replace").splitlines():
                if line:
                    log.write("%d\t%.3f\t%s\n" % (pid, now, line))


if __name__ == "__main__":
    main()
