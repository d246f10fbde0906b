"""The Jinja side: the pillar_roots loader, the bytecode cache, the sandboxed environment
and the master-side `salt` dict. Part of halite-render (halite_render.py)."""

import base64
import collections.abc
import hashlib
import os
import random
import shlex
import string
import subprocess
import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox

from halite_common import NotAllowed, RenderError, _to_bytes, deep_copy, dict_update, filter_by, traverse
from halite_host import host_call
from halite_filters import SALT_FILTERS, SaltTags, _b64decode, _b64encode, _digest, _finalize


# ---------------------------------------------------------------------------------------------
# The loader: templates come only from the saltenv's pillar_roots. '..' may not climb out of a
# root, absolute names are read from the root, and a file whose real path leaves every root (a
# symlink out) is not found.


def _inside(path, roots):
    real = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return True
    return False


class RootsLoader(jinja2.BaseLoader):
    def __init__(self, searchpath):
        self.searchpath = list(searchpath)

    def get_source(self, environment, template):
        name = template.replace("\\", "/")
        relative = name.split("/", 1)[0] in (".", "..")
        if relative:
            base = environment.globals.get("tpldir", ".")
            name = os.path.normpath("/".join((base, name)))
            if name.split("/", 1)[0] == "..":
                raise jinja2.TemplateNotFound(template)
        name = os.path.normpath(name.lstrip("/"))
        if name == "." or name.split("/", 1)[0] == "..":
            raise jinja2.TemplateNotFound(template)
        tpldir = os.path.dirname(name)
        environment.globals.update(
            {
                "tplfile": template if relative else name,
                "tpldir": environment.globals.get("tpldir", ".") if relative else (tpldir or "."),
                "tpldot": tpldir.replace("/", "."),
            }
        )
        for root in self.searchpath:
            path = os.path.join(root, name)
            if not os.path.isfile(path) or not _inside(path, self.searchpath):
                continue
            with open(path, "rb") as f:
                contents = f.read().decode("utf-8")
            mtime = os.path.getmtime(path)

            def uptodate(path=path, mtime=mtime):
                try:
                    return os.path.getmtime(path) == mtime
                except OSError:
                    return False

            return contents, path, uptodate
        raise jinja2.TemplateNotFound(template)


class MemoryBytecodeCache(jinja2.BytecodeCache):
    """Compiled templates kept in the process, checked against the source's checksum."""

    def __init__(self, limit=2048):
        self.store = collections.OrderedDict()
        self.limit = limit

    def load_bytecode(self, bucket):
        code = self.store.get(bucket.key)
        if code is not None:
            self.store.move_to_end(bucket.key)
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket):
        self.store[bucket.key] = bucket.bytecode_to_string()
        while len(self.store) > self.limit:
            self.store.popitem(last=False)


BYTECODE = MemoryBytecodeCache()

ENVIRONMENTS = {}

MAIN_TEMPLATES = collections.OrderedDict()


def jinja_environment(searchpath, env_options, allow_undefined):
    key = (tuple(searchpath), tuple(sorted(env_options.items())), allow_undefined)
    env = ENVIRONMENTS.get(key)
    if env is not None:
        return env
    args = {
        "loader": RootsLoader(searchpath),
        "extensions": ["jinja2.ext.do", "jinja2.ext.loopcontrols", SaltTags],
        "bytecode_cache": BYTECODE,
        "cache_size": 0,  # every import goes through the loader, which sets tpldir as Salt's does
        "finalize": _finalize,
    }
    for k, v in env_options.items():
        if hasattr(jinja2.defaults, k.upper()):
            args[k.lower()] = v
    if not allow_undefined:
        args["undefined"] = jinja2.StrictUndefined
    env = jinja2.sandbox.SandboxedEnvironment(**args)
    env.filters.update(SALT_FILTERS)
    env.tests["list"] = lambda v: isinstance(v, (list, tuple, set))
    env.globals_base = dict(env.globals)
    if len(ENVIRONMENTS) > 64:
        ENVIRONMENTS.clear()
    ENVIRONMENTS[key] = env
    return env


# ---------------------------------------------------------------------------------------------
# The master-side `salt` dict: the execution functions pillar templates call, computed here from
# the minion's grains, the template's pillar and the options, as Salt's master would.


class SaltFunctions(collections.abc.Mapping):
    def __init__(self, request, context):
        self.request = request
        self.grains = context.get("grains") or {}
        self.pillar = context.get("pillar") or {}
        self.opts = context.get("opts") or {}
        self.funcs = {
            "grains.get": self.grains_get,
            "grains.item": self.grains_item,
            "grains.items": lambda: dict(self.grains),
            "grains.filter_by": self.grains_filter_by,
            "grains.has_value": lambda key: bool(traverse(self.grains, key, False)),
            "pillar.get": self.pillar_get,
            "pillar.items": lambda *a, **k: dict(self.pillar),
            "pillar.item": lambda *keys, **k: {key: traverse(self.pillar, key, "") for key in keys},
            "pillar.filter_by": self.pillar_filter_by,
            "config.get": self.config_get,
            "config.option": self.config_get,
            "mine.get": self.mine_get,
            "saltutil.runner": self.saltutil_runner,
            "file.file_exists": self.file_exists,
            "file.directory_exists": self.directory_exists,
            "file.read": self.file_read,
            "cmd.run": self.cmd_run,
            "cmd.shell": self.cmd_run,
            "random.get_str": self.random_str,
            "random.rand_int": lambda start=1, end=10, seed=None: random.Random(seed).randint(start, end),
            "random.shadow_hash": self.shadow_hash,
            "hashutil.digest": lambda instr, checksum="md5": hashlib.new(checksum, _to_bytes(instr)).hexdigest(),
            "hashutil.md5_digest": _digest("md5"),
            "hashutil.sha256_digest": _digest("sha256"),
            "hashutil.sha512_digest": _digest("sha512"),
            "hashutil.base64_encodestring": lambda s: base64.encodebytes(_to_bytes(s)).decode(),
            "hashutil.base64_b64encode": _b64encode,
            "hashutil.base64_b64decode": _b64decode,
            "test.ping": lambda: True,
        }
        self.modules = {}
        for name, fn in self.funcs.items():
            mod, fun = name.split(".", 1)
            self.modules.setdefault(mod, _Module(mod))[fun] = fn

    def __getitem__(self, name):
        if name in self.funcs:
            return self.funcs[name]
        if name in self.modules:
            return self.modules[name]
        raise NotAllowed("salt['%s'] is not available in halite's pillar renderer" % name)

    def __iter__(self):
        return iter(self.funcs)

    def __len__(self):
        return len(self.funcs)

    def grains_get(self, key, default="", delimiter=":", ordered=True):
        return traverse(self.grains, key, default, delimiter)

    def grains_item(self, *keys, **kwargs):
        return {key: traverse(self.grains, key, "") for key in keys}

    def grains_filter_by(self, lookup_dict, grain="os_family", merge=None, default="default", base=None):
        return filter_by(lookup_dict, grain, self.grains, merge, default, base)

    def pillar_get(self, key, default="", merge=False, merge_nested_lists=None, delimiter=":", **kwargs):
        value = traverse(self.pillar, key, default, delimiter)
        if merge and isinstance(default, dict) and isinstance(value, dict):
            return dict_update(deep_copy(default), value, bool(merge_nested_lists))
        return value

    def pillar_filter_by(self, lookup_dict, pillar, merge=None, default="default", base=None):
        return filter_by(lookup_dict, pillar, self.pillar, merge, default, base)

    def config_get(self, key, default="", delimiter=":", **kwargs):
        for source in (self.opts, self.grains, self.pillar):
            value = traverse(source, key, "_|-", delimiter)
            if value != "_|-":
                return value
        return default

    _MINE_TARGETS = ("glob", "pcre", "list", "grain", "grain_pcre", "ipcidr", "compound", "pillar", "pillar_pcre")

    def mine_get(self, tgt, fun, tgt_type="glob", exclude_minion=False):
        # On a master, Salt's execution module reads the master's own local data store (the
        # template runs with file_client local), which holds no mine: it answers {} whatever
        # the minions sent. Salt's documented way is saltutil.runner('mine.get', ...), below.
        if tgt_type not in self._MINE_TARGETS:
            raise RenderError("mine.get: unknown target type %r" % (tgt_type,))
        return {}

    def saltutil_runner(self, name, arg=None, kwarg=None, full_return=False, saltenv="base", jid=None, **kwargs):
        if name != "mine.get":
            raise NotAllowed("salt['saltutil.runner']('%s') is not available in halite's pillar renderer" % name)
        params = ["tgt", "fun", "tgt_type"]
        call = {}
        for i, value in enumerate(list(arg or [])):
            if i >= len(params):
                raise RenderError("mine.get takes at most 3 arguments")
            call[params[i]] = value
        extra = dict(kwarg or {})
        extra.update({k: v for k, v in kwargs.items() if not k.startswith("__")})
        for key, value in extra.items():
            if key not in params:
                raise RenderError("mine.get got an unexpected keyword argument %r" % key)
            call[key] = value
        for key in ("tgt", "fun"):
            if key not in call:
                raise RenderError("mine.get is missing the argument %r" % key)
        call.setdefault("tgt_type", "glob")
        return host_call("mine.get", call)

    def _root_path(self, path):
        if path.startswith("salt://"):
            path = path[len("salt://"):]
        roots = self.request.get("searchpath") or []
        for root in roots:
            candidate = os.path.join(root, path.lstrip("/")) if not os.path.isabs(path) else path
            if os.path.exists(candidate) and _inside(candidate, roots):
                return candidate
        if os.path.isabs(path) and not _inside(path, roots):
            raise NotAllowed("%s is outside pillar_roots" % path)
        return None

    def file_exists(self, path):
        found = self._root_path(path)
        return bool(found) and os.path.isfile(found)

    def directory_exists(self, path):
        found = self._root_path(path)
        return bool(found) and os.path.isdir(found)

    def file_read(self, path, binary=False):
        found = self._root_path(path)
        if not found:
            raise RenderError("No such file or directory: '%s'" % path)
        with open(found, "rb" if binary else "r") as f:
            return f.read()

    def cmd_run(self, cmd, cwd=None, timeout=None, python_shell=True, **kwargs):
        if not self.request.get("allow_cmd_run"):
            raise NotAllowed("salt['cmd.run'] is off on this master (pillar_allow_cmd_run)")
        limit = self.request.get("cmd_timeout") or 30
        proc = subprocess.run(
            cmd if python_shell else shlex.split(cmd),
            shell=bool(python_shell),
            cwd=cwd,
            capture_output=True,
            timeout=min(timeout or limit, limit),
        )
        return (proc.stdout + proc.stderr).decode("utf-8", "replace").rstrip("\n")

    def random_str(self, length=20, chars=None, **kwargs):
        alphabet = chars or (string.ascii_letters + string.digits + string.punctuation)
        rng = random.SystemRandom()
        return "".join(rng.choice(alphabet) for _ in range(int(length)))

    def shadow_hash(self, crypt_salt=None, password=None, algorithm="sha512"):
        raise NotAllowed("salt['random.shadow_hash'] is not available in halite's pillar renderer")


class _Module(dict):
    """salt.grains.get as well as salt['grains.get']."""

    def __init__(self, name):
        super().__init__()
        self.name = name

    def __getattr__(self, fun):
        try:
            return self[fun]
        except KeyError:
            raise NotAllowed("salt['%s.%s'] is not available in halite's pillar renderer" % (self.name, fun))
