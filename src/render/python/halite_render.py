"""halite's template renderer, run inside halite-render (CPython embedded, one process per core at
most, owned by halite-master). It reads one request at a time from a pipe and answers it:

    frame   = 4-byte big-endian length, then one msgpack map
    request = {"op": "render", "file", "searchpath", "saltenv", "sls", "renderer",
               "renderer_blacklist", "renderer_whitelist", "context", "jinja_env",
               "jinja_sls_env", "allow_undefined", "allow_cmd_run", "max_output"}
              {"op": "ping"}
    answer  = {"ok": True, "data": ...} or {"ok": False, "error": "...", "detail": "..."}

Mid-render, a template may need what only the master has (the mine of every minion): the
renderer then writes a call frame {"call": "mine.get", "args": {...}} and reads one answer
frame ({"ok": True, "data": ...} or {"ok": False, "error": ...}) before it goes on.

The semantics follow Salt's pillar rendering (renderer pipelines from `#!` lines, Jinja2 in a
sandbox with StrictUndefined, Salt's YAML loader rules, Salt's filters and tags, a master-side
`salt` dict); this file is halite's own code. What it does not know it refuses: an unknown
renderer or `salt[...]` function fails the sls with an error that names it.
"""

import base64
import collections.abc
import datetime
import fnmatch
import hashlib
import io
import itertools
import json
import os
import pprint
import random
import re
import shlex
import string
import struct
import subprocess
import sys
import traceback
import uuid

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox
import msgpack
import yaml
import yaml.constructor
import yaml.nodes

# ---------------------------------------------------------------------------------------------
# Errors


class RenderError(Exception):
    """A template or data error: the sls fails, the message goes to the master's log."""


class NotAllowed(RenderError):
    """Something a template asked for that halite does not allow or does not have."""


# ---------------------------------------------------------------------------------------------
# YAML as Salt loads it: maps keep their order, a duplicate key is an error ("conflicting ID"),
# timestamps stay strings, an int with leading zeros is read as decimal, merge keys (<<) never
# override a key the map sets itself.

_YamlBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SaltLikeLoader(_YamlBase):
    def construct_mapping(self, node, deep=False):
        if not isinstance(node, yaml.nodes.MappingNode):
            raise yaml.constructor.ConstructorError(
                None, None, "expected a mapping node, but found %s" % node.id, node.start_mark
            )
        self.flatten_mapping(node)
        mapping = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found unacceptable key %s" % key_node.value,
                    key_node.start_mark,
                )
            if key in mapping:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found conflicting ID '%s'" % key,
                    key_node.start_mark,
                )
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_map(self, node):
        data = {}
        yield data
        data.update(self.construct_mapping(node))

    def construct_scalar(self, node):
        if node.tag == "tag:yaml.org,2002:int" and node.value != "0":
            if node.value.startswith("0") and not node.value.startswith(("0b", "0x")):
                node.value = node.value.lstrip("0") or "0"
        return super().construct_scalar(node)

    def construct_plain_str(self, node):
        return str(self.construct_scalar(node))

    def flatten_mapping(self, node):
        merged = []
        own = []
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                if isinstance(value_node, yaml.nodes.MappingNode):
                    self.flatten_mapping(value_node)
                    merged.extend(value_node.value)
                elif isinstance(value_node, yaml.nodes.SequenceNode):
                    parts = []
                    for sub in value_node.value:
                        if not isinstance(sub, yaml.nodes.MappingNode):
                            raise yaml.constructor.ConstructorError(
                                "while constructing a mapping",
                                node.start_mark,
                                "expected a mapping for merging, but found %s" % sub.id,
                                sub.start_mark,
                            )
                        self.flatten_mapping(sub)
                        parts.append(sub.value)
                    for part in reversed(parts):
                        merged.extend(part)
                else:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        "expected a mapping or list of mappings for merging, but found %s"
                        % value_node.id,
                        value_node.start_mark,
                    )
            else:
                if key_node.tag == "tag:yaml.org,2002:value":
                    key_node.tag = "tag:yaml.org,2002:str"
                own.append((key_node, value_node))
        if merged:
            # a key the map sets itself wins over a merged one; two merged maps that set the
            # same key are a conflict, as in Salt's loader
            mine = {k.value for k, _ in own}
            node.value = [(k, v) for k, v in merged if k.value not in mine] + own
        else:
            node.value = own


SaltLikeLoader.add_constructor("tag:yaml.org,2002:map", SaltLikeLoader.construct_yaml_map)
SaltLikeLoader.add_constructor("tag:yaml.org,2002:omap", SaltLikeLoader.construct_yaml_map)
SaltLikeLoader.add_constructor("tag:yaml.org,2002:str", SaltLikeLoader.construct_plain_str)
SaltLikeLoader.add_constructor("tag:yaml.org,2002:timestamp", SaltLikeLoader.construct_scalar)


def yaml_load(text):
    return yaml.load(text, Loader=SaltLikeLoader)


def _has_dict_key(data):
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, (dict, tuple)) or _has_dict_key(value):
                return True
    elif isinstance(data, list):
        return any(_has_dict_key(item) for item in data)
    return False


# ---------------------------------------------------------------------------------------------
# Data helpers with Salt's meaning


def _in_embedded(items, key):
    for embedded in (x for x in items if isinstance(x, dict)):
        if key in embedded:
            return True, embedded[key]
    return False, None


def traverse(data, key, default=None, delimiter=":"):
    """salt.utils.data.traverse_dict_and_list: 'a:b:0' walks maps and lists."""
    ptr = data
    parts = key.split(delimiter) if isinstance(key, str) else ([key] if isinstance(key, int) else key)
    for each in parts:
        if isinstance(ptr, list):
            try:
                idx = int(each)
            except ValueError:
                idx = None
            # a map in the list that has the key wins over an index
            found, value = _in_embedded(ptr, each if idx is None else idx)
            if found:
                ptr = value
            elif idx is None:
                return default
            else:
                try:
                    ptr = ptr[idx]
                except IndexError:
                    return default
        else:
            try:
                ptr = ptr[each]
            except (KeyError, TypeError):
                try:
                    loaded = yaml.safe_load(each) if isinstance(each, str) else each
                except Exception:
                    return default
                if loaded == each:
                    return default
                try:
                    ptr = ptr[loaded]
                except (KeyError, TypeError):
                    return default
    return ptr


def dict_update(dest, upd, merge_lists=False):
    """salt.utils.dictupdate.update: upd merged into dest, recursively."""
    for key, val in upd.items():
        cur = dest.get(key) if isinstance(dest, dict) else None
        if isinstance(cur, collections.abc.Mapping) and isinstance(val, collections.abc.Mapping):
            dest[key] = dict_update(cur, val, merge_lists)
        elif isinstance(cur, list) and isinstance(val, list) and merge_lists:
            merged = list(cur)
            merged.extend(x for x in val if x not in merged)
            dest[key] = merged
        else:
            dest[key] = val
    return dest


def deep_copy(data):
    if isinstance(data, dict):
        return {k: deep_copy(v) for k, v in data.items()}
    if isinstance(data, list):
        return [deep_copy(v) for v in data]
    return data


def filter_by(lookup_dict, lookup, data, merge=None, default="default", base=None):
    """salt.utils.data.filter_by: the first key (a glob) that matches the looked-up value."""
    ret = None
    val = traverse(data, lookup, [])
    for each in val if isinstance(val, list) else [val]:
        for key in lookup_dict:
            test_key = key if isinstance(key, str) else str(key)
            test_each = each if isinstance(each, str) else str(each)
            if fnmatch.fnmatchcase(test_each, test_key):
                ret = lookup_dict[key]
                break
        if ret is not None:
            break
    if ret is None:
        ret = lookup_dict.get(default, None)
    if base and base in lookup_dict:
        base_values = lookup_dict[base]
        if ret is None:
            ret = base_values
        elif isinstance(base_values, collections.abc.Mapping):
            if not isinstance(ret, collections.abc.Mapping):
                raise RenderError("filter_by default and look-up values must both be dictionaries.")
            ret = dict_update(deep_copy(base_values), ret)
    if merge:
        if not isinstance(merge, collections.abc.Mapping):
            raise RenderError("filter_by merge argument must be a dictionary.")
        if ret is None:
            ret = merge
        else:
            dict_update(ret, deep_copy(merge))
    return ret


def _to_bytes(value):
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


# ---------------------------------------------------------------------------------------------
# Jinja filters Salt adds (the ones pillar trees use); Jinja's own stay as they are.


def _yaml_dquote(text):
    out = io.StringIO()
    emitter = yaml.emitter.Emitter(out, width=sys.maxsize)
    emitter.write_double_quoted(str(text))
    return out.getvalue()


def _yaml_squote(text):
    out = io.StringIO()
    emitter = yaml.emitter.Emitter(out, width=sys.maxsize)
    emitter.write_single_quoted(str(text))
    return out.getvalue()


def _yaml_encode(data):
    node = yaml.representer.SafeRepresenter().represent_data(data)
    if not isinstance(node, yaml.ScalarNode):
        raise TypeError("yaml_encode() only works with YAML scalar data; failed for %s" % type(data))
    if node.tag.rsplit(":", 1)[-1] == "str":
        return _yaml_dquote(node.value)
    return node.value


def _to_bool(val):
    if val is None:
        return False
    if isinstance(val, bool):
        return val
    if isinstance(val, str):
        return val.lower() in ("yes", "1", "true")
    if isinstance(val, int):
        return val > 0
    if not isinstance(val, collections.abc.Hashable):
        return len(val) > 0
    return False


def _sequence(data):
    return data if isinstance(data, (list, tuple, set, dict)) else [data]


def _regex_flags(ignorecase, multiline):
    return (re.I if ignorecase else 0) | (re.M if multiline else 0)


def _regex_search(txt, rgx, ignorecase=False, multiline=False):
    m = re.search(rgx, txt, _regex_flags(ignorecase, multiline))
    return m.groups() if m else None


def _regex_match(txt, rgx, ignorecase=False, multiline=False):
    m = re.match(rgx, txt, _regex_flags(ignorecase, multiline))
    return m.groups() if m else None


def _regex_replace(txt, rgx, val, ignorecase=False, multiline=False):
    return re.compile(rgx, _regex_flags(ignorecase, multiline)).sub(val, txt)


def _tojson(val, indent=None, **options):
    options.setdefault("ensure_ascii", True)
    if indent is not None:
        options["indent"] = indent
    text = json.dumps(val, **options)
    return (
        text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027")
    )


def _format_json(value, sort_keys=True, indent=None):
    return jinja2.utils.markupsafe.Markup(json.dumps(value, sort_keys=sort_keys, indent=indent).strip())


def _format_yaml(value, flow_style=True):
    text = yaml.safe_dump(value, default_flow_style=flow_style).strip()
    if text.endswith("\n..."):
        text = text[:-4]
    return jinja2.utils.markupsafe.Markup(text)


def _format_python(value):
    return jinja2.utils.markupsafe.Markup(pprint.pformat(value).strip())


def _load_yaml(value):
    try:
        return yaml_load(str(value))
    except yaml.YAMLError as exc:
        raise jinja2.exceptions.TemplateRuntimeError("Encountered error loading yaml: %s" % exc)


def _load_json(value):
    try:
        return json.loads(str(value))
    except (ValueError, TypeError):
        raise jinja2.exceptions.TemplateRuntimeError("Unable to load json from %s" % value)


def _load_text(value):
    return str(value)


def _dict_to_sls_yaml_params(value, flow_style=False):
    return _format_yaml([{k: v} for k, v in value.items()], flow_style=flow_style)


def _b64encode(instr):
    return base64.b64encode(_to_bytes(instr)).decode()


def _b64decode(instr):
    decoded = base64.b64decode(_to_bytes(instr))
    try:
        return decoded.decode()
    except UnicodeDecodeError:
        return decoded


def _digest(name):
    return lambda instr: hashlib.new(name, _to_bytes(instr)).hexdigest()


def _path_join(*parts, **kwargs):
    use_posix = kwargs.pop("use_posixpath", False)
    if kwargs:
        raise RenderError("path_join got unexpected arguments: %s" % ", ".join(kwargs))
    parts = [os.path.normpath(str(p)) for p in parts]
    if not parts:
        return ""
    root = parts.pop(0)
    if not parts:
        return root
    return os.path.normpath(os.path.join(root, *[p.lstrip(os.sep) for p in parts]))


def _date_cast(date):
    if date is None:
        return datetime.datetime.now()
    if isinstance(date, datetime.datetime):
        return date
    if isinstance(date, str):
        date = int(date) if date.isdigit() else float(date)
    return datetime.datetime.fromtimestamp(date)


def _strftime(date=None, format="%Y-%m-%d"):
    return _date_cast(date).strftime(format)


def _skip(_data):
    return ""


def _unique(values):
    if isinstance(values, collections.abc.Hashable):
        return set(values)
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _both_hashable(a, b):
    return isinstance(a, collections.abc.Hashable) and isinstance(b, collections.abc.Hashable)


def _union(a, b):
    return set(a) | set(b) if _both_hashable(a, b) else _unique(list(a) + list(b))


def _intersect(a, b):
    return set(a) & set(b) if _both_hashable(a, b) else _unique([x for x in a if x in b])


def _difference(a, b):
    return set(a) - set(b) if _both_hashable(a, b) else _unique([x for x in a if x not in b])


def _symmetric_difference(a, b):
    if _both_hashable(a, b):
        return set(a) ^ set(b)
    return _unique(_difference(a, b) + _difference(b, a))


def _to_num(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        try:
            return float(text)
        except (TypeError, ValueError):
            return text


def _avg(lst):
    if not isinstance(lst, collections.abc.Hashable):
        return float(sum(lst) / len(lst))
    return float(lst)


def _flatten(data, levels=None, preserve_nulls=False):
    out = []
    for element in data:
        if not preserve_nulls and element in (None, "None", "null"):
            continue
        if isinstance(element, list) and (levels is None or levels > 0):
            out.extend(_flatten(element, None if levels is None else levels - 1, preserve_nulls))
        else:
            out.append(element)
    return out


def _is_hex(value):
    try:
        int(value, 16)
        return True
    except (TypeError, ValueError):
        return False


def _sample(value, size, seed=None):
    rng = random.Random(hash(seed)) if seed is not None else random
    return rng.sample(value, size)


def _ip_kind(value, version=None):
    import ipaddress

    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        return False
    return version is None or ip.version == version


_GLOBAL_UUID = uuid.UUID("91633EBF-1C86-5E33-935A-28061F4B480E")


def _camel(text, uppercamel=False):
    words = str(text).split("_")
    first = words[0].capitalize() if uppercamel else words[0]
    return first + "".join(w.capitalize() for w in words[1:])


def _method_call(obj, name, *args, **kwargs):
    # Salt calls any attribute; a name with '_' would walk out of the sandbox, so it is refused.
    if not isinstance(name, str) or name.startswith("_"):
        raise jinja2.exceptions.SecurityError("method_call of %r is not allowed" % (name,))
    return getattr(obj, name, lambda *a, **k: None)(*args, **kwargs)


def _snake(text):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", str(text)).lower()


SALT_FILTERS = {
    "json": _format_json,
    "yaml": _format_yaml,
    "python": _format_python,
    "load_yaml": _load_yaml,
    "load_json": _load_json,
    "load_text": _load_text,
    "dict_to_sls_yaml_params": _dict_to_sls_yaml_params,
    "tojson": _tojson,
    "yaml_encode": _yaml_encode,
    "yaml_dquote": _yaml_dquote,
    "yaml_squote": _yaml_squote,
    "to_bool": _to_bool,
    "sequence": _sequence,
    "skip": _skip,
    "quote": shlex.quote,
    "regex_escape": re.escape,
    "regex_search": _regex_search,
    "regex_match": _regex_match,
    "regex_replace": _regex_replace,
    "base64_encode": _b64encode,
    "base64_decode": _b64decode,
    "md5": _digest("md5"),
    "sha1": _digest("sha1"),
    "sha256": _digest("sha256"),
    "sha512": _digest("sha512"),
    "path_join": _path_join,
    "strftime": _strftime,
    "date_format": _strftime,
    "traverse": traverse,
    "unique": _unique,
    "to_num": _to_num,
    "str_to_num": _to_num,
    "avg": _avg,
    "min": lambda obj: min(obj),
    "max": lambda obj: max(obj),
    "flatten": _flatten,
    "is_iter": lambda thing, ignore=(str,): (not (ignore and isinstance(thing, ignore)))
    and isinstance(thing, collections.abc.Iterable),
    "sorted_ignorecase": lambda to_sort: sorted(to_sort, key=lambda x: x.lower()),
    "substring_in_list": lambda needle, haystack: any(needle in x for x in haystack),
    "exactly_n_true": lambda it, amount=1: amount == sum(1 for x in it if x),
    "exactly_one_true": lambda it: 1 == sum(1 for x in it if x),
    "contains_whitespace": lambda text: any(c.isspace() for c in text),
    "is_hex": _is_hex,
    "uuid": lambda val: str(uuid.uuid5(_GLOBAL_UUID, str(val))),
    "random_sample": _sample,
    "random_shuffle": lambda value, seed=None: _sample(value, len(value), seed),
    "to_snake_case": _snake,
    "to_camelcase": _camel,
    "is_ip": lambda v: _ip_kind(v),
    "is_ipv4": lambda v: _ip_kind(v, 4),
    "is_ipv6": lambda v: _ip_kind(v, 6),
    "method_call": lambda obj, name, *a, **k: _method_call(obj, name, *a, **k),
    "union": _union,
    "intersect": _intersect,
    "difference": _difference,
    "symmetric_difference": _symmetric_difference,
    "is_list": lambda v: isinstance(v, (list, tuple, set)),
    "combinations": itertools.combinations,
    "combinations_with_replacement": itertools.combinations_with_replacement,
    "compress": itertools.compress,
    "permutations": itertools.permutations,
    "product": itertools.product,
    "zip": zip,
    "zip_longest": itertools.zip_longest,
}


class PrintableDict(dict):
    """A mapping printed by a template prints as YAML-friendly flow text, as in Salt."""

    def __str__(self):
        out = []
        for key, value in self.items():
            out.append("%r: %r" % (key, value) if isinstance(value, str) else "%r: %s" % (key, value))
        return "{" + ", ".join(out) + "}"

    __repr__ = __str__


def _finalize(data):
    def explore(value):
        if isinstance(value, dict):
            return PrintableDict((k, explore(v)) for k, v in value.items())
        if isinstance(value, (list, tuple, set)):
            return value.__class__(explore(v) for v in value)
        return value

    return explore(data)


class SaltTags(jinja2.ext.Extension):
    """{% load_yaml as x %}...{% endload %}, {% import_yaml 'f' as x %} and the json/text forms."""

    tags = {"load_yaml", "load_json", "load_text", "import_yaml", "import_json", "import_text", "profile"}

    def parse(self, parser):
        name = parser.stream.current.value
        if name.startswith("load_"):
            return self._parse_load(parser, name)
        if name.startswith("import_"):
            return self._parse_import(parser, name.split("_", 1)[1])
        lineno = next(parser.stream).lineno
        parser.stream.expect("name:as")
        parser.parse_expression()
        return parser.parse_statements(["name:endprofile"], drop_needle=True)

    def _parse_load(self, parser, filter_name):
        lineno = next(parser.stream).lineno
        parser.stream.expect("name:as")
        target = parser.parse_assign_target()
        macro = "_" + parser.free_identifier().name
        body = parser.parse_statements(("name:endload",), drop_needle=True)
        call = jinja2.nodes.Call(jinja2.nodes.Name(macro, "load"), [], [], None, None)
        return [
            jinja2.nodes.Macro(macro, [], [], body).set_lineno(lineno),
            jinja2.nodes.Assign(
                target, jinja2.nodes.Filter(call, filter_name, [], [], None, None)
            ).set_lineno(lineno),
        ]

    def _parse_import(self, parser, kind):
        node = parser.parse_import()
        target = node.target
        lineno = node.lineno
        loaded = jinja2.nodes.Filter(jinja2.nodes.Name(target, "load"), "load_" + kind, [], [], None, None)
        return [
            node,
            jinja2.nodes.Assign(jinja2.nodes.Name(target, "store"), loaded).set_lineno(lineno),
        ]


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


# ---------------------------------------------------------------------------------------------
# Renderers and the pipeline


def sls_context(path, sls, searchpath):
    """Salt's tplfile, tpldir, slspath and friends for a file."""
    slspath = sls.replace(".", "/")
    template = path.replace("\\", "/")
    if not sls:
        template = template.rsplit("/", 1)[-1]
    elif template.endswith(slspath + ".sls"):
        template = template[-(4 + len(slspath)):]
    elif template.endswith(slspath + "/init.sls"):
        template = template[-(9 + len(slspath)):]
    slspath = template.rsplit("/", 1)[0] if "/" in template else ""
    return {
        "tplpath": path,
        "tplfile": template,
        "tpldir": slspath or ".",
        "tpldot": slspath.replace("/", "."),
        "slspath": slspath,
        "slsdotpath": slspath.replace("/", "."),
        "slscolonpath": slspath.replace("/", ":"),
        "sls_path": slspath.replace("/", "_"),
    }


def render_jinja(text, request, context, argline):
    if argline and argline != "-s":
        raise RenderError("Unknown renderer option: %s" % argline)
    sls = request.get("sls", "")
    env_options = request.get("jinja_sls_env" if sls else "jinja_env") or {}
    env = jinja_environment(request.get("searchpath") or [], env_options, bool(request.get("allow_undefined")))
    env.globals.clear()
    env.globals.update(env.globals_base)
    env.globals["odict"] = collections.OrderedDict
    env.globals.update(context)
    key = (id(env), request.get("file"), hash(text))
    template = MAIN_TEMPLATES.get(key)
    try:
        if template is None:
            template = env.from_string(text)
            MAIN_TEMPLATES[key] = template
            while len(MAIN_TEMPLATES) > 1024:
                MAIN_TEMPLATES.popitem(last=False)
        output = template.render(**context)
    except jinja2.exceptions.UndefinedError as exc:
        raise _jinja_error("Jinja variable ", exc, text)
    except jinja2.exceptions.TemplateSyntaxError as exc:
        raise _jinja_error("Jinja syntax error: ", exc, text, syntax=True)
    except (jinja2.exceptions.TemplateRuntimeError, jinja2.exceptions.SecurityError) as exc:
        raise _jinja_error("Jinja syntax error: ", exc, text)
    except NotAllowed as exc:
        raise _jinja_error("Problem running salt function in Jinja template: ", exc, text)
    except RenderError:
        raise
    except RecursionError:
        raise RenderError("Jinja error: maximum recursion depth exceeded")
    except MemoryError:
        raise RenderError("Jinja error: out of memory")
    except Exception as exc:
        raise _jinja_error("Jinja error: ", exc, text)
    if text.endswith("\n"):
        output += "\n"
    return output


def _template_line(exc=None):
    """The line of the template (not of Jinja's own code) where the error happened."""
    lineno = getattr(exc, "lineno", None) if exc is not None else None
    if lineno is None:
        for frame in reversed(traceback.extract_tb(sys.exc_info()[2])):
            if frame.name in ("top-level template code", "template", "<module>"):
                lineno = frame.lineno
                break
    return lineno


def _context(text, line, num_lines=5, marker="    <======================"):
    """Salt's get_context: the lines around `line`, the bad one marked."""
    lines = text.splitlines()
    if line > len(lines):
        return text
    start = max(0, line - num_lines - 1)
    end = min(len(lines), line + num_lines)
    at = line - start - 1
    buf = []
    if start > 0:
        buf.append("[...]")
        at += 1
    buf.extend(lines[start:end])
    if end < len(lines):
        buf.append("[...]")
    buf[at] += marker
    return "---\n%s\n---" % "\n".join(buf)


def _jinja_error(prefix, exc, text, syntax=False):
    """Salt's SaltRenderError text: the message, then `; line N` and the context when known."""
    line = _template_line(exc if syntax else None)
    message = "%s%s" % (prefix, exc)
    if line:
        message += "; line %d\n\n%s" % (line, _context(text, line))
    return RenderError(message)


def render_yaml(data, request, context, argline):
    if not isinstance(data, str):
        raise RenderError("the yaml renderer got %s, not text" % type(data).__name__)
    try:
        result = yaml_load(data)
    except yaml.scanner.ScannerError as exc:
        # Salt's loader is the C one, whose marks carry no buffer: the problem alone.
        problem = exc.problem
        if problem == "found character '\\t' that cannot start any token":
            problem = "Illegal tab character"
        raise RenderError(problem)
    except yaml.YAMLError as exc:
        raise RenderError(str(exc))
    if not result:
        result = {}
    if _has_dict_key(result):
        raise RenderError("Invalid YAML, possible double curly-brace")
    return result


def render_json(data, request, context, argline):
    if not isinstance(data, str):
        raise RenderError("the json renderer got %s, not text" % type(data).__name__)
    if data.startswith("#!"):  # the shebang line is not JSON
        data = data[data.find("\n") + 1:] if "\n" in data else ""
    if not data.strip():
        return {}
    try:
        return json.loads(data)
    except ValueError as exc:
        raise RenderError("JSON: %s" % exc)


def render_py(data, request, context, argline):
    path = request.get("file")
    namespace = {
        "__grains__": context.get("grains") or {},
        "__pillar__": context.get("pillar") or {},
        "__opts__": context.get("opts") or {},
        "__salt__": context.get("salt"),
        "__sls__": request.get("sls", ""),
        "__env__": request.get("saltenv", "base"),
        "__file__": path,
        "__name__": "halite_pillar_py",
    }
    for k, v in context.items():
        namespace.setdefault(k, v)
    try:
        code = compile(data, path, "exec")
        exec(code, namespace)
    except Exception as exc:
        raise RenderError("py renderer: %s: %s" % (type(exc).__name__, exc))
    run = namespace.get("run")
    if not callable(run):
        raise RenderError("py renderer: %s has no run() function" % path)
    try:
        return run()
    except RenderError:
        raise
    except Exception as exc:
        raise RenderError("py renderer: run() raised %s: %s" % (type(exc).__name__, exc))


_GPG_BLOCK = re.compile(r"-----BEGIN PGP MESSAGE-----.*?-----END PGP MESSAGE-----", re.DOTALL)


def render_gpg(data, request, context, argline):
    keydir = request.get("gpg_keydir")

    def decrypt(text):
        if not _GPG_BLOCK.search(text):
            return text
        if not keydir:
            raise RenderError("gpg: encrypted data but no gpg_keydir is set")
        if not os.path.isdir(keydir):
            raise RenderError("gpg: encrypted data but gpg_keydir %s does not exist" % keydir)
        try:
            import gnupg
        except ImportError:
            raise RenderError("gpg: python3-gnupg is not installed on this master")
        gpg = gnupg.GPG(gnupghome=keydir)
        result = gpg.decrypt(text)
        if not result.ok:
            raise RenderError("Could not decrypt cipher %s, received: %s" % (text, result.stderr))
        return str(result)

    def walk(value):
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            return decrypt(value)
        return value

    return walk(data)


RENDERERS = {"jinja": render_jinja, "yaml": render_yaml, "json": render_json, "py": render_py, "gpg": render_gpg}
OLD_STYLE = {"yaml_jinja": "jinja|yaml", "json_jinja": "jinja|json"}


def pipeline(text, request):
    """The renderers for a file: its `#!` line if it has one (not `#!/`), else the default."""
    first = text.split("\n", 1)[0]
    if first.startswith("#!") and not first.startswith("#!/"):
        spec = first.strip()[2:]
    else:
        spec = request.get("renderer") or "jinja|yaml"
    spec = OLD_STYLE.get(spec, spec)
    blacklist = request.get("renderer_blacklist") or []
    whitelist = request.get("renderer_whitelist") or []
    steps = []
    for part in (p.strip() for p in spec.split("|")):
        name, argline = (part + " ").split(" ", 1)
        if (whitelist and name not in whitelist) or (blacklist and name in blacklist):
            continue
        if name not in RENDERERS:
            raise RenderError('The renderer "%s" is not available' % spec)
        steps.append((name, argline.strip()))
    return steps


def render_file(request):
    path = request["file"]
    searchpath = request.get("searchpath") or []
    if not _inside(path, searchpath):
        raise RenderError("%s is outside pillar_roots" % path)
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RenderError("%s is not UTF-8: %s" % (path, exc))
    if not text.strip():
        return {}
    context = dict(request.get("context") or {})
    context.setdefault("grains", {})
    context.setdefault("pillar", {})
    context.setdefault("opts", {})
    context["saltenv"] = request.get("saltenv", "base")
    context["sls"] = request.get("sls", "")
    context.update(sls_context(path, context["sls"], searchpath))
    context["salt"] = SaltFunctions(request, context)
    data = text
    for name, argline in pipeline(text, request):
        data = RENDERERS[name](data, request, context, argline)
    return data


def check_file(request):
    """Syntax only: the Jinja parse when the pipeline has a jinja step, else the data renderers
    (yaml, json) on the text itself; `#!py` is compiled, not run."""
    path = request["file"]
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    if not text.strip():
        return
    steps = pipeline(text, request)
    names = [n for n, _ in steps]
    if "jinja" in names:
        env = jinja_environment(request.get("searchpath") or [], request.get("jinja_sls_env") or {}, False)
        try:
            env.parse(text)
        except jinja2.exceptions.TemplateSyntaxError as exc:
            raise _jinja_error("Jinja syntax error: ", exc, text, syntax=True)
        return
    if names and names[0] == "py":
        try:
            compile(text, path, "exec")
        except SyntaxError as exc:
            raise RenderError("py renderer: %s" % exc)
        return
    data = text
    for name, argline in steps:
        if name in ("yaml", "json"):
            data = RENDERERS[name](data, request, {}, argline)


# ---------------------------------------------------------------------------------------------
# ext_pillar built-ins (Salt's cmd_yaml, cmd_json, file_tree), run here so that a command that
# hangs is killed with its renderer at the deadline.


def _ext_command(command, minion_id, timeout):
    command = command.replace("%s", minion_id)
    proc = subprocess.run(command, shell=True, capture_output=True, timeout=timeout)
    return proc.stdout.decode("utf-8", "replace")


def _file_tree(top, keep_newline):
    pillar = {}
    top = os.path.normpath(top)
    for dir_path, dir_names, file_names in os.walk(top, followlinks=False):
        node = pillar
        prefix = os.path.relpath(dir_path, top)
        if prefix != ".":
            for part in prefix.split(os.sep):
                node = node[part]
        for d in dir_names:
            node[d] = {}
        for f in file_names:
            path = os.path.join(dir_path, f)
            if not os.path.isfile(path):
                continue
            with open(path, "rb") as fh:
                contents = fh.read()
            keep = keep_newline
            if isinstance(keep_newline, list):
                rel = f if prefix == "." else os.path.join(prefix, f)
                keep = any(fnmatch.fnmatch(rel, pat) for pat in keep_newline)
            if contents.endswith(b"\n") and not keep:
                contents = contents[:-1]
            try:
                node[f] = contents.decode("utf-8")
            except UnicodeDecodeError:
                node[f] = contents
    return pillar


def run_ext_pillar(request):
    name = request.get("name")
    args = request.get("args")
    minion_id = request.get("minion_id", "")
    timeout = request.get("cmd_timeout") or 30
    if name in ("cmd_yaml", "cmd_json"):
        command = args if isinstance(args, str) else (args[0] if isinstance(args, list) and args else None)
        if isinstance(args, dict):
            command = args.get("command")
        if not isinstance(command, str):
            raise RenderError("%s needs a command" % name)
        output = _ext_command(command, minion_id, timeout)
        try:
            data = yaml.safe_load(output) if name == "cmd_yaml" else json.loads(output)
        except Exception:
            sys.stderr.write("%s: data from '%s' failed to parse\n" % (name, command))
            return {}
        return data if isinstance(data, dict) else {}
    if name == "file_tree":
        opts = args if isinstance(args, dict) else {}
        root = opts.get("root_dir")
        if not root or not os.path.isdir(root):
            raise RenderError("file_tree: root_dir %r is not a directory" % root)
        if opts.get("template"):
            raise RenderError("file_tree: template is not supported by halite")
        keep = opts.get("keep_newline", False)
        result = {}
        for group in request.get("nodegroups") or []:
            gdir = os.path.join(root, "nodegroups", group)
            if os.path.isdir(gdir):
                dict_update(result, _file_tree(gdir, keep))
        hdir = os.path.join(root, "hosts", minion_id)
        if minion_id and "/" not in minion_id and os.path.isdir(hdir):
            dict_update(result, _file_tree(hdir, keep))
        return result
    raise RenderError("Specified ext_pillar interface %s is unavailable" % name)


def _default(obj):
    if isinstance(obj, (set, tuple)):
        return list(obj)
    if isinstance(obj, (datetime.date, datetime.datetime)):
        return obj.isoformat()
    return str(obj)


def handle(request):
    op = request.get("op")
    if op == "ping":
        return {"ok": True, "data": "pong"}
    if op == "crash":  # tests: the pool must survive a renderer that dies
        if request.get("allow_test_ops"):
            os._exit(70)
    if op == "spin":  # tests: the pool must kill a renderer that never answers
        if request.get("allow_test_ops"):
            while True:
                pass
    if op == "check":
        try:
            check_file(request)
            return {"ok": True, "data": None}
        except RenderError as exc:
            return {"ok": False, "error": str(exc)}
        except (OSError, UnicodeError) as exc:
            return {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
        except Exception as exc:
            return {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
    if op == "ext_pillar":
        try:
            return {"ok": True, "data": run_ext_pillar(request)}
        except RenderError as exc:
            return {"ok": False, "error": str(exc)}
        except subprocess.TimeoutExpired as exc:
            return {"ok": False, "error": "command timed out: %s" % exc}
        except Exception as exc:
            return {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
    if op != "render":
        return {"ok": False, "error": "unknown op %r" % op}
    try:
        return {"ok": True, "data": render_file(request)}
    except RenderError as exc:
        return {"ok": False, "error": str(exc)}
    except (OSError, UnicodeError) as exc:
        return {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
    except RecursionError:
        return {"ok": False, "error": "maximum recursion depth exceeded"}
    except MemoryError:
        return {"ok": False, "error": "out of memory"}
    except Exception as exc:
        return {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc),
                "detail": traceback.format_exc(limit=20)}


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


def serve(fd_in, fd_out):
    stdin = os.fdopen(fd_in, "rb", buffering=0)
    stdout = os.fdopen(fd_out, "wb", buffering=0)
    _HOST["in"], _HOST["out"] = stdin, stdout
    sys.setrecursionlimit(2000)
    while True:
        header = _read_exact(stdin, 4)
        if header is None:
            return 0
        (size,) = struct.unpack(">I", header)
        body = _read_exact(stdin, size)
        if body is None:
            return 0
        try:
            request = msgpack.unpackb(body, raw=False, strict_map_key=False)
        except Exception as exc:
            answer = {"ok": False, "error": "bad request: %s" % exc}
        else:
            answer = handle(request)
        try:
            payload = msgpack.packb(answer, use_bin_type=True, default=_default)
        except Exception as exc:
            payload = msgpack.packb({"ok": False, "error": "the result cannot be sent: %s" % exc})
        limit = request.get("max_output") if isinstance(request, dict) else None
        if limit and len(payload) > limit:
            payload = msgpack.packb(
                {"ok": False, "error": "rendered data is %d bytes, over the %d-byte limit" % (len(payload), limit)}
            )
        stdout.write(struct.pack(">I", len(payload)) + payload)


if __name__ == "__main__":
    sys.exit(serve(0, 1))
