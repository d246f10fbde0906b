"""Stock Salt's cost per `_pillar` request on a tree, for bench/run's pillar row: what a
salt-master's AESFuncs._pillar does (salt.pillar.get_pillar, then compile_pillar), in a loop,
in one process. Run with PYTHONPATH=<shims>:$SALT_SRC; Salt is imported, never copied here.
Prints the same two lines as halite_pillar_bench.
Usage: stock_pillar.py WORKDIR ROOT COUNT
"""
import os
import sys
import time

import salt.config
import salt.pillar


def grains(i):
    mid = "bench%d" % (i % 1000)
    return mid, {"id": mid, "os_family": "Debian" if i % 3 else "RedHat",
                 "role": "app" if i % 2 else "web", "region": "eu" if i % 4 else "us",
                 "num_cpus": 4}


def main():
    work, root, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    conf = os.path.join(work, "master")
    with open(conf, "w") as f:
        f.write("root_dir: %s\npillar_roots: {base: [%s]}\nlog_level: quiet\n" % (work, root))
    opts = salt.config.master_config(conf)
    mid, g = grains(0)
    warm = salt.pillar.get_pillar(opts, g, mid, "base").compile_pillar()
    if "_errors" in warm:
        sys.exit("the tree does not compile cleanly: %r" % warm["_errors"])
    cpu0, t0 = time.process_time(), time.monotonic()
    for i in range(count):
        mid, g = grains(i)
        salt.pillar.get_pillar(opts, g, mid, "base").compile_pillar()
    cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
    print("pillar_cpu_ms_per_compile %.3f" % (cpu * 1000.0 / count))
    print("pillar_compiles_per_s %.1f" % (count / wall))


if __name__ == "__main__":
    main()
