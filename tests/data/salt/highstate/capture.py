#!/usr/bin/env python3
"""Expected highstate text from stock Salt: run by hand, never by CI.

Feeds every returns/NAME.json (a dict of minion id -> state return, as `salt --out json`
printed it, or a dict a batch run displays) through stock Salt's highstate outputter with
each --state-output mode, with and without colour and --state-verbose, and writes what
`salt` prints (display_output: the text without trailing whitespace, then a newline) to
expected/NAME/MODE-COLOR-VERBOSE.txt.

    PYTHONPATH=/tmp/ref/salt3007:/tmp/ref/pyshim /usr/bin/python3 capture.py
"""
import copy
import json
import os

import salt.config
import salt.output

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ["full", "terse", "mixed", "changes", "full_id", "terse_id"]


def main():
    base = copy.deepcopy(salt.config.DEFAULT_MASTER_OPTS)
    for name in sorted(os.listdir(os.path.join(HERE, "returns"))):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(HERE, "returns", name), encoding="utf-8") as f:
            data = json.load(f)
        out_dir = os.path.join(HERE, "expected", name[: -len(".json")])
        os.makedirs(out_dir, exist_ok=True)
        for mode in MODES:
            for color in (False, True):
                for verbose in (True, False):
                    opts = copy.deepcopy(base)
                    opts.update(color=color, state_output=mode, state_verbose=verbose)
                    text = salt.output.out_format(copy.deepcopy(data), "highstate", opts)
                    file = "{}-{}-{}.txt".format(
                        mode, "color" if color else "plain",
                        "verbose" if verbose else "quiet")
                    with open(os.path.join(out_dir, file), "w", encoding="utf-8") as f:
                        f.write(text + "\n" if text else "")


if __name__ == "__main__":
    main()
