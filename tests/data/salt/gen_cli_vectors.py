"""Known answers for halite's CLI argument parsing and target matchers, from stock Salt.

Calls Salt's own functions (salt.utils.args.parse_input / yamlify_arg,
salt.utils.minions.nodegroup_comp plus LocalClient._prep_pub's compound join,
salt.utils.data.subdict_match, salt.matchers.ipcidr_match.match) on the inputs below and
prints JSON. Salt's source is not part of halite; run by hand from a 3007.x tree:

  PYTHONPATH=/tmp/ref/pyshim:/tmp/ref/salt3007 /usr/bin/python3 \
      tests/data/salt/gen_cli_vectors.py > tests/data/salt/cli_vectors.json
"""
import json
import os
import subprocess
import sys
import tempfile

import salt.utils.args
import salt.utils.data
import salt.utils.minions
import salt.matchers.ipcidr_match as ipcidr_match

ARGS = [
    "hi", "1", "-1", "0x1f", "010", "1.5", "1e3", "true", "True", "yes", "no", "off", "on",
    "null", "None", "~", "", " ", "'quoted'", '"1"', "'1'", "[1, 2]", "[a, b]", "{a: 1}",
    '{"a": 1}', "#comment", "# x", "a #b", "foo: bar", "- a", "a,b", ",hi", "2024-01-01",
    "12:30", "1_000", "!!str 5", "&anchor x", "*star", "*", "web*", "a:b", "inf", ".inf",
    "nan", ".nan", "1:2:3", "[unclosed", "{bad", "@at", "`bt", "%pct", "|", ">", "\\n",
    "tab\tx", "long " * 3, "Yes", "NO", "y", "n", "0o17", "+5", "1__0", "123456789012345678901",
    "a=b", "foo=bar", "pillar={\"a\": 1}", "x=1", "x=true", "x=", "=v", "a=b=c", "1=2",
    "x=[1,2]", "x={b: 2}", "x=None", "x=#c", "x=null", "x='s'", "x=1.0", "has space=1",
    "a-b=1", "a.b=1", "__x=1", "x==1", "x=01", "fun=test.ping", "20250101120000123456",
    "---", "...", "!", "#", "x=|", "[1, {a: b}]", "{a: [1, 2], b: {c: null}}", "-", "-5.5e-3",
    "0b101", "1:60", "12e", "TRUE", "tRue", "~x", "'unterminated", "x=a b",
    # Keys that are one key to Python's dict (its loader refuses a repeated key): numbers
    # equal across int, float and bool; PyYAML's every .nan is one shared object.
    "{1: a, true: b}", "{1: a, 1.0: b}", "{0: a, false: b}", "{0: a, -0.0: b}",
    "{true: a, yes: b}", "{10: a, 0xa: b}", "{2: a, 2.0e0: b}", "{.inf: a, .Inf: b}",
    "{.nan: a, .NaN: b}", "{~: a, null: b}", "{a: 1, a: 2}", "{1: a, 2: b, 1.5: c}",
    "{-1: a, -1.0: b}", "{.nan: a}", "{4294967296: a, 4294967296.0: b}",
    "{9007199254740993: a, 9007199254740992.0: b}",
]


def to_json(value):
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: to_json(v) for k, v in value.items()}
        # Keys JSON cannot hold as they are (numbers, bools, None), in Salt's order.
        return {"__map__": [[to_json(k), to_json(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, float) and value != value:
        return {"__float__": "nan"}
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return {"__float__": "inf" if value > 0 else "-inf"}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return {"__repr__": repr(value), "__type__": type(value).__name__}


def parse_input_vectors():
    out = []
    for arg in ARGS:
        # What SaltCMDOptionParser publishes as `arg` for one CLI word (kwargs conditioned
        # into a trailing {"__kwarg__": True, ...}).
        out.append({"input": arg, "arg": to_json(salt.utils.args.parse_input([arg]))})
    return out


NODEGROUPS = {
    "web": "web*",
    "names": "db1 db2",
    "listed": ["db1", "db2"],
    "regexy": ["db[12]", "web1"],
    "debian": "G@os:Debian and web*",
    "nested": "N@debian or N@names",
    "deep": ["N@nested", "and", "not", "db2"],
    "loop": "N@loop2 or web1",
    "loop2": "N@loop",
    "withlist": ["L@a,b", "or", "c"],
    "single": "db1",
}


def prep_pub_compound(tgt):
    # What LocalClient._prep_pub publishes for a compound target (N@ resolved in place).
    words = []
    for word in tgt.split():
        if word.startswith("N@") and len(word) > 2:
            words.extend(salt.utils.minions.nodegroup_comp(word[2:], NODEGROUPS))
        else:
            words.append(word)
    return " ".join(words)


def nodegroup_vectors():
    out = []
    for name in NODEGROUPS:
        if name.startswith("loop"):
            continue
        out.append({"nodegroup": name, "compound": prep_pub_compound("N@" + name)})
    for expr in ["N@web and not N@single", "G@os:Debian or N@listed", "N@deep"]:
        out.append({"expr": expr, "compound": prep_pub_compound(expr)})
    return {"nodegroups": NODEGROUPS, "cases": out}


DATA = {
    "role": "Web",
    "num": 2,
    "flag": False,
    "roles": ["web", "db"],
    "deep": {"a": {"b": "c:d"}, "list": [{"k": "v"}, "x"]},
    "tz": "Europe:Paris",
    "empty": {},
    "ints": {"1": "one"},
}
EXPRS = [
    "role:web", "role:WEB", "role:W*", "role:db", "num:2", "flag:False", "flag:false",
    "roles:db", "roles:d?", "deep:a:b:c:d", "deep:a:b:c*", "deep:a:b", "deep:a", "deep:a:*",
    "deep:list:k:v", "deep:list:x", "deep:list:0:k:v", "deep:list:1", "deep:*:a",
    "*:role", "tz:Europe:Paris", "tz:Europe:*", "empty:*", "nosuch:x", "role", "ints:1:one",
    "deep:list:k", "roles:0", "deep:a:b:C:D",
]
REGEX_EXPRS = ["role:w.b", "role:^web$", "roles:d.", "deep:a:b:c:.*", "num:\\d", "role:eb"]


def subdict_vectors():
    out = []
    for expr in EXPRS:
        for mode in ("glob", "exact"):
            out.append({"expr": expr, "mode": mode, "match": bool(salt.utils.data.subdict_match(
                DATA, expr, exact_match=(mode == "exact")))})
    for expr in REGEX_EXPRS:
        out.append({"expr": expr, "mode": "regex",
                    "match": bool(salt.utils.data.subdict_match(DATA, expr, regex_match=True))})
    return {"data": DATA, "cases": out}


GRAINS = {"ipv4": ["127.0.0.1", "10.1.2.3"], "ipv6": ["::1", "fe80::1"]}
CIDRS = [
    "10.1.2.3", "10.1.2.4", "10.1.2.0/24", "10.0.0.0/8", "10.1.2.3/24", "10.1.2.0/255.255.255.0",
    "11.0.0.0/8", "::1", "0:0::1", "fe80::/64", "fe80::1/64", "2001:db8::/32", "0.0.0.0/0",
    "10.1.2.3/32", "bogus", "10.1.2.0/33", "", "127.0.0.1/8",
]


def ipcidr_vectors():
    out = []
    for tgt in CIDRS:
        out.append({"tgt": tgt, "match": bool(ipcidr_match.match(tgt, opts={"grains": GRAINS}))})
    return {"grains": GRAINS, "cases": out}


# Whole `salt` command lines through SaltCMDOptionParser (one process each: Salt's logging
# set-up may run once per process). The config dir only needs to exist.
COMMAND_LINES = [
    ["*", "test.ping"],
    ["*", "test.ping", "--out", "json"],
    ["--out=json", "-t", "7", "web*", "test.echo", "hi"],
    ["-L", "a,b", "test.ping", "-v"],
    ["*", "test.echo", "--", "--out"],
    ["*", "test.echo", "-t9", "x"],
    ["-Lv", "a b", "test.ping", "--timeout=3"],
    ["-E", "web.*", "--verb", "test.ping"],
    ["-L", "a, b,,c", "test.ping"],
    ["*", "test.echo", "-1"],
    ["*", "test.ping", "--bogus"],
    ["-E", "-L", "x", "test.ping"],
    ["*", "test.ping,test.echo", ",", "hi", ",", "x"],
    ["-G", "os:Debian", "test.arg", "1", "a=1", "pillar={\"a\": 1}"],
    ["*", "test.ping,test.echo", ",", "hi"],
    ["*", "test.ping,test.echo,test.arg", ",", "hi", ",", "1", "k=v"],
    ["*", "test.ping,test.echo", ",hi"],
    ["*", "test.echo,test.echo", "a,b"],
    ["*", "cmd.run,test.echo", "ls -l,", "x"],
    ["*", "test.echo,test.echo", "--args-separator=;", "a", ";", "b"],
    ["*", "test.ping,test.echo"],
    ["-C", "G@os:Debian and web*", "test.ping"],
    ["-N", "group1", "test.ping"],
    ["-I", "role:web", "test.ping", "--async"],
    ["-S", "10.0.0.0/8", "test.ping"],
    ["-J", "role:w.*", "test.ping"],
    ["--delimiter=;", "-G", "a;b", "test.ping"],
    ["*", "test.arg", "--no-parse=x", "x=1", "y=1"],
    ["*"],
]

PARSE_ONE = r"""
import json, sys
import salt.utils.parsers as p
pa = p.SaltCMDOptionParser()
try:
    pa.parse_args(sys.argv[1:])
except SystemExit as e:
    print(json.dumps({"exit": e.code}))
    sys.exit(0)
o = pa.options
print(json.dumps({"tgt": pa.config.get("tgt"), "fun": pa.config.get("fun"),
                  "arg": pa.config.get("arg"), "tgt_type": pa.selected_target_option or "glob",
                  "show_jid": o.show_jid, "args_separator": o.args_separator,
                  "out": o.output, "timeout": o.timeout, "async": getattr(o, "async"),
                  "verbose": o.verbose, "delimiter": o.delimiter}, default=repr))
"""


def command_line_vectors():
    out = []
    with tempfile.TemporaryDirectory() as conf:
        with open(os.path.join(conf, "master"), "w") as f:
            f.write("root_dir: %s\nlog_file: %s/log\n" % (conf, conf))
        for argv in COMMAND_LINES:
            res = subprocess.run([sys.executable, "-c", PARSE_ONE, "-c", conf] + argv,
                                 capture_output=True, text=True)
            if res.returncode != 0:
                raise RuntimeError(res.stderr)
            out.append({"argv": argv, "parsed": json.loads(res.stdout.strip().splitlines()[-1]),
                        "stderr": res.stderr.strip().splitlines()[-1:] if res.stderr else []})
    return out


json.dump({"parse_input": parse_input_vectors(), "nodegroups": nodegroup_vectors(),
           "subdict_match": subdict_vectors(), "ipcidr": ipcidr_vectors(),
           "command_lines": command_line_vectors()},
          sys.stdout, indent=1, sort_keys=True)
sys.stdout.write("\n")
