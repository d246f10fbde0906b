"""The Jinja filters and tags Salt adds (the ones pillar trees use), and the finalize hook.
Part of halite-render (halite_render.py)."""

import base64
import collections.abc
import datetime
import hashlib
import io
import itertools
import json
import os
import pprint
import random
import re
import shlex
import sys
import uuid
import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox
import yaml
import yaml.constructor
import yaml.nodes

from halite_common import RenderError, _to_bytes, traverse, yaml_load


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
