"""The renderer's shared ground: its errors, YAML as Salt loads it and the data helpers with
Salt's meaning (traverse, dict_update, filter_by). Part of halite-render (halite_render.py)."""

import collections.abc
import fnmatch
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
