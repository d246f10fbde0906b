#!/usr/bin/env python3
"""Expected text of Salt's plain outputters: run by hand, never by CI.

Feeds sample.json (minion id -> return) through stock Salt's nested (with and without
colour, and with a non-zero retcode), raw, pprint, txt, newline_values_only and json
outputters (and --out-indent for json and pprint) and writes what `salt` prints to
expected/NAME.txt.

    PYTHONPATH=/tmp/ref/salt3007:/tmp/ref/pyshim /usr/bin/python3 capture.py
"""
import copy
import json
import os

import salt.config
import salt.output

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = {
    # name: (outputter, opts, kwargs)
    "nested-plain": ("nested", {"color": False}, {}),
    "nested-color": ("nested", {"color": True}, {}),
    "nested-color-retcode": ("nested", {"color": True}, {"_retcode": 1}),
    "raw": ("raw", {"color": False}, {}),
    "pprint": ("pprint", {"color": False}, {}),
    "pprint-indent4": ("pprint", {"color": False, "output_indent": 4}, {}),
    "txt": ("txt", {"color": False}, {}),
    "newline_values_only": ("newline_values_only", {"color": False}, {}),
    "json": ("json", {"color": False}, {}),
    "json-indent2": ("json", {"color": False, "output_indent": 2}, {}),
    "json-indent-1": ("json", {"color": False, "output_indent": -1}, {}),
}


def main():
    with open(os.path.join(HERE, "sample.json"), encoding="utf-8") as f:
        data = json.load(f)
    for name, (out, extra, kwargs) in CASES.items():
        opts = copy.deepcopy(salt.config.DEFAULT_MASTER_OPTS)
        opts.update(extra)
        text = salt.output.out_format(copy.deepcopy(data), out, opts, **kwargs)
        with open(os.path.join(HERE, "expected", name + ".txt"), "w", encoding="utf-8") as f:
            f.write(text + "\n" if text else "")


if __name__ == "__main__":
    main()
