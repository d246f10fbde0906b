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

import collections.abc
import fnmatch
import json
import os
import re
import struct
import subprocess
import sys
import traceback
import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox
import msgpack
import yaml
import yaml.constructor
import yaml.nodes

from halite_common import NotAllowed, RenderError, _has_dict_key, dict_update, yaml_load
from halite_host import _HOST, _default, _read_exact, _write_frame
from halite_jinja import MAIN_TEMPLATES, SaltFunctions, _inside, jinja_environment


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


def serve(fd_in, fd_out):
    stdin = os.fdopen(fd_in, "rb", buffering=0)
    stdout = os.fdopen(fd_out, "wb", buffering=0)
    _HOST["in"], _HOST["out"] = stdin, stdout
    sys.setrecursionlimit(2000)
    # Loaded (jinja2 and the rest are imported by now): the pool waits for this frame before it
    # gives this renderer a file, so start-up is not charged to that file's deadline.
    _write_frame(stdout, {"ready": True})
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
