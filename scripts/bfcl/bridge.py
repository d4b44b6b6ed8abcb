#!/usr/bin/env python3
"""An MCP server (Streamable HTTP) that serves BFCL's multi-turn environments.

    python bridge.py --catalog CATALOG.json [--listen 127.0.0.1:0]

CATALOG.json is discbench's catalog of a BFCL import: one MCP server per BFCL entry,
named by the entry id (`multi_turn_base_0`), with that entry's tools. The bridge
binds, prints one line to stdout, its endpoint URL (`http://HOST:PORT/mcp`), and
serves until stdin reaches end of file or it gets SIGTERM; logs go to stderr. It
needs only the standard library and the installed bfcl-eval, whose environment
classes it imports (nothing of BFCL is copied here).

Protocol: JSON bodies only (no SSE), one JSON-RPC message per POST.
  POST /mcp?instance=<entry id> with `initialize`: a new session with fresh
      instances of the entry's classes; the answer carries `Mcp-Session-Id`.
  POST /mcp with `Mcp-Session-Id`: ping, tools/list, tools/call, resources/list,
      resources/read; a notification (or a client's answer) gets 202, no body.
      No session header: HTTP 400; an unknown session: HTTP 404.
  DELETE /mcp with `Mcp-Session-Id` ends the session; GET is 405.
The resource `bfcl://state` is the state of every involved instance as canonical
JSON: two sessions' texts are equal exactly when BFCL's multi-turn state checker
finds their instances equal (see "Canonical state" below).
"""

import argparse
import copy
import datetime
import enum
import fractions
import importlib
import inspect
import json
import math
import numbers
import os
import signal
import sys
import threading
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PROTOCOLS = ("2025-03-26", "2025-06-18", "2025-11-25")
STATE_URI = "bfcl://state"
# The names BFCL's executor refuses to call, whichever class would answer them.
REFUSED = {"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"}
CLASSES = ("GorillaFileSystem", "MathAPI", "MessageAPI", "TwitterAPI", "TicketAPI",
           "TradingBot", "TravelAPI", "VehicleControlAPI")  # the multi-turn ones
FS_MODULE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.gorilla_file_system"

# Environment code touches process-wide state (MathAPI sets mpmath's global
# precision before it computes; long-context methods rewrite module-level dicts),
# so all of it (loading, calls, state reads) runs under this one lock. A call takes
# microseconds, so concurrent sessions hardly wait.
ENV_LOCK = threading.Lock()


def log(message):
    print(f"bfcl-bridge: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- BFCL's entries

_entries = {}  # category -> {entry id -> entry}; each data file is parsed once
_entries_lock = threading.Lock()


def find_entry(entry_id):
    """The multi-turn entry with this id in bfcl-eval's installed data, or None."""
    category = entry_id.rsplit("_", 1)[0]  # as BFCL: the id without its number
    if not category.startswith("multi_turn") or "/" in category:
        return None
    with _entries_lock:
        if category not in _entries:
            from bfcl_eval.constants.category_mapping import VERSION_PREFIX
            from bfcl_eval.constants.eval_config import PROMPT_PATH

            path, found = PROMPT_PATH / f"{VERSION_PREFIX}_{category}.json", {}
            if path.is_file():
                with open(path, encoding="utf-8") as f:
                    for entry in map(json.loads, filter(str.strip, f)):
                        found[entry["id"]] = entry
            _entries[category] = found
        return _entries[category].get(entry_id)


# ---------------------------------------------------------------- Canonical state
#
# What BFCL compares (multi_turn_checker.state_checker, _compare_instances): for
# each involved class, every attribute in vars() of the ground-truth instance whose
# name does not start with "_", with Python's `!=`. The classes' own __eq__ is not
# used at that level. Nested values compare as Python compares them:
#   - dicts ignore order; keys 1, 1.0 and True are one key, 1 and "1" are two;
#   - numbers compare by value across types (True == 1 == 1.0, 0.5 == Fraction(1, 2));
#   - a list never equals a tuple; a set equals a frozenset; str never equals bytes;
#   - gorilla_file_system's File.__eq__ compares only `name` and `content` (not the
#     private modification time), Directory.__eq__ only `name` and `contents` (not
#     `parent`); a File never equals a Directory;
#   - an object whose class has no __eq__ equals only itself.
# `canonical` maps a value to JSON data so that equal values, and only those, get
# the same text: numbers by value (booleans as 1/0, integral floats as integers),
# other kinds as one-key objects tagged "#kind", and a real string key starting
# with "#" gets one more "#" so that no tag can be forged. An object without __eq__
# is written with its session and id(), so two sessions never match on it (BFCL's
# states hold none). Known gaps, unreachable with BFCL's classes: NaN (unequal to
# itself in Python) is written as {"#float": "nan"}; an attribute only one of two
# instances has counts as a difference (BFCL's checker would crash or ignore it).


def _eq_fields():
    """The classes whose __eq__ compares some fields only, and those fields."""
    if not hasattr(_eq_fields, "table"):
        fs = importlib.import_module(FS_MODULE)
        _eq_fields.table = {fs.File: ("name", "content"), fs.Directory: ("name", "contents")}
    return _eq_fields.table


def _text(data):
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False)


def _number(value):
    """A real number, written alike for numbers Python finds equal."""
    if isinstance(value, complex):  # equal to a real number when its imaginary part is 0
        if value.imag:
            return {"#complex": [_number(value.real), _number(value.imag)]}
        value = value.real
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return {"#float": str(value)}
        return int(value) if value.is_integer() else value
    try:
        exact = fractions.Fraction(value)  # Decimal, Fraction, numpy integers...
    except (TypeError, ValueError, OverflowError):
        return _number(float(value))  # a Decimal NaN or infinity
    if exact.denominator == 1:
        return exact.numerator
    near = float(exact)
    return near if near == exact else {"#rational": f"{exact.numerator}/{exact.denominator}"}


def _key(key, salt):
    if isinstance(key, str):
        key = str.__str__(key)
        return "#" + key if key.startswith("#") else key
    return "#" + _text(canonical(key, salt))


def canonical(value, salt):
    """`value` as JSON data following Python's equality (see above)."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, (bool, int)):
        return int(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, dict):
        return {_key(k, salt): canonical(v, salt) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(v, salt) for v in value]
    if isinstance(value, tuple):
        return {"#tuple": [canonical(v, salt) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"#set": sorted((canonical(v, salt) for v in value), key=_text)}
    if isinstance(value, numbers.Number):
        return _number(value)
    if isinstance(value, (bytes, bytearray)):
        return {"#bytes": bytes(value).hex()}
    if isinstance(value, datetime.datetime):  # aware ones: equal at the same instant
        if value.utcoffset() is not None:
            value = value.astimezone(datetime.timezone.utc)
        return {"#datetime": value.isoformat()}
    for kind in (datetime.date, datetime.time, datetime.timedelta):
        if isinstance(value, kind):
            return {"#" + kind.__name__: str(value)}
    if isinstance(value, enum.Enum):  # members are singletons, shared by sessions
        return {"#enum": f"{type(value).__qualname__}.{value.name}"}
    kind = type(value)
    fields = _eq_fields().get(kind)
    if fields is not None:
        return {"#" + kind.__name__: {f: canonical(getattr(value, f), salt) for f in fields}}
    if kind.__eq__ is object.__eq__:
        return {"#object": f"{kind.__qualname__}@{salt}:{id(value):x}"}
    log(f"state: guessing the equality of {kind.__qualname__} from its public fields")
    public = {k: v for k, v in getattr(value, "__dict__", {}).items() if not k.startswith("_")}
    return {"#" + kind.__qualname__: canonical(public, salt)}


# ---------------------------------------------------------------- Sessions


def bfcl_result_text(result):
    """A call's return value as the string BFCL's executor makes of it."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:
            return str(result)
    return str(result)


class Session:
    """One conversation's own instances of an entry's classes."""

    def __init__(self, session_id, entry, tools):
        from bfcl_eval.constants.executable_backend_config import (
            CLASS_FILE_PATH_MAPPING, STATELESS_CLASSES)

        self.id, self.entry_id = session_id, entry["id"]
        self.tool_names = {t.get("name") for t in tools}
        self.results = []  # every executed call's result string, in call order
        category = entry["id"].rsplit("_", 1)[0]
        long_context = "long_context" in category or "composite" in category  # as BFCL
        self.instances = {}
        self.methods = {}  # public method name -> bound method; a later class wins
        for class_name in entry["involved_classes"]:
            module = importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name])
            instance = getattr(module, class_name)()
            if class_name not in STATELESS_CLASSES:
                config = copy.deepcopy(entry["initial_config"].get(class_name, {}))
                instance._load_scenario(config, long_context=long_context)
                # Loading can put module-level objects into the state (TravelAPI's
                # long-context credit cards and bookings are shared dicts its
                # bookings then change), so the loaded instance is copied whole:
                # no two sessions share anything mutable.
                instance = copy.deepcopy(instance)
            self.instances[class_name] = instance
            for name, method in inspect.getmembers(instance, inspect.ismethod):
                if not name.startswith("_"):
                    self.methods[name] = method

    def call(self, name, arguments):
        """(text, is_error) of a tools/call; the text is BFCL's result string."""
        if name in REFUSED:
            text = f"Error during execution: Function call {name} is not allowed."
        elif name not in self.tool_names:
            return f"Unknown tool: {name}", True
        elif name not in self.methods:  # in the catalog, yet no class has it
            text = f"Error during execution: name '{name}' is not defined"
        else:
            try:
                text = bfcl_result_text(self.methods[name](**arguments))
            except Exception as e:
                text = f"Error during execution: {e}"
        self.results.append(text)
        return text, False

    def state(self):
        """The canonical JSON text of what BFCL compares of every instance."""
        return _text({
            class_name: {attr: canonical(value, self.id)
                         for attr, value in vars(instance).items() if not attr.startswith("_")}
            for class_name, instance in self.instances.items()
        })


# ---------------------------------------------------------------- MCP over HTTP


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Bridge:
    """The catalog, the live sessions, and the JSON-RPC methods."""

    def __init__(self):
        self.ready = threading.Event()  # set once the catalog is parsed
        self.servers = {}  # entry id -> its tools, as in the catalog
        self.rendered = {}  # entry id -> its tools as JSON text, made when first listed
        self.sessions = {}  # session id -> Session
        self.lock = threading.Lock()
        self.version = "unknown"

    def load(self, raw):
        """Parses the catalog. This runs after the URL is printed (a whole catalog is
        megabytes); requests wait for it, and a broken catalog ends the process."""
        try:
            for server in json.loads(raw)["mcp_servers"]:
                self.servers[server["name"]] = server.get("tools", [])
        except Exception as e:
            log(f"cannot read the catalog: {e!r}")
            os._exit(2)
        try:
            import importlib.metadata

            self.version = importlib.metadata.version("bfcl-eval")
        except Exception as e:
            log(f"bfcl-eval's version is unknown: {e!r}")
        self.ready.set()
        try:  # import the classes now, so that the first session starts quickly
            from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

            for name in CLASSES:
                importlib.import_module(CLASS_FILE_PATH_MAPPING[name])
            _eq_fields()
        except Exception:
            log(f"cannot import bfcl-eval's classes:\n{traceback.format_exc()}")

    def initialize(self, params, query):
        instance = (query.get("instance") or [""])[0]
        entry = find_entry(instance) if instance in self.servers else None
        if entry is None:
            raise RpcError(-32602, f"unknown instance {instance!r}: not a BFCL multi-turn "
                           "entry both in the catalog and in bfcl-eval's data")
        session_id = uuid.uuid4().hex
        with ENV_LOCK:
            session = Session(session_id, entry, self.servers[instance])
        with self.lock:
            self.sessions[session_id] = session
        asked = params.get("protocolVersion")
        return session_id, json.dumps({
            "protocolVersion": asked if asked in PROTOCOLS else PROTOCOLS[-1],
            "capabilities": {"tools": {}, "resources": {}},
            "serverInfo": {"name": "discbench-bfcl-bridge", "version": self.version},
        })

    def answer(self, session, method, params):
        """The result of a request in a session, as JSON text."""
        if method == "ping":
            return "{}"
        if method == "tools/list":  # the catalog's list, verbatim, in one page
            text = self.rendered.get(session.entry_id)
            if text is None:
                text = json.dumps(self.servers[session.entry_id], ensure_ascii=False)
                self.rendered[session.entry_id] = text
            return '{"tools":' + text + "}"
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments") or {}
            if not isinstance(name, str) or not isinstance(arguments, dict):
                raise RpcError(-32602, "tools/call needs a string `name` and object `arguments`")
            with ENV_LOCK:
                text, is_error = session.call(name, arguments)
            result = {"content": [{"type": "text", "text": text}], "isError": is_error}
            return json.dumps(result, ensure_ascii=False)
        if method == "resources/list":
            resource = {"uri": STATE_URI, "name": "state", "mimeType": "application/json"}
            return json.dumps({"resources": [resource]})
        if method == "resources/read":
            if params.get("uri") != STATE_URI:
                raise RpcError(-32002, f"resource not found: {params.get('uri')!r}")
            with ENV_LOCK:
                text = session.state()
            content = {"uri": STATE_URI, "mimeType": "application/json", "text": text}
            return json.dumps({"contents": [content]}, ensure_ascii=False)
        raise RpcError(-32601, f"method not found: {method}")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # no delayed-ACK stall between header and body

    def log_message(self, format, *args):  # no access log
        pass

    def send(self, status, body=b"", headers=()):
        self.send_response(status)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def rpc(self, id_, result=None, error=None, status=200, headers=()):
        """A JSON-RPC answer: `result` is JSON text, `error` an RpcError."""
        if error is not None:
            error = {"code": error.code, "message": str(error)}
            body = json.dumps({"jsonrpc": "2.0", "id": id_, "error": error})
        else:
            body = '{"jsonrpc":"2.0","id":' + json.dumps(id_) + ',"result":' + result + "}"
        self.send(status, body.encode("utf-8"), headers)

    def query(self):
        """The query parameters of a request to /mcp; None after a 404 for another path."""
        self.server.bridge.ready.wait()
        url = urlsplit(self.path)
        if url.path.rstrip("/") != "/mcp":
            self.close_connection = True  # its body, if any, is left unread
            self.send(404)
            return None
        return parse_qs(url.query)

    def session(self):
        """The request's session; None after answering 400 or 404."""
        session_id = self.headers.get("Mcp-Session-Id")
        if not session_id:
            self.send(400, b'{"error": "no Mcp-Session-Id header"}')
            return None
        with self.server.bridge.lock:
            session = self.server.bridge.sessions.get(session_id)
        if session is None:
            self.send(404, b'{"error": "unknown session"}')
        return session

    def do_POST(self):
        bridge, query = self.server.bridge, self.query()
        if query is None:
            return
        try:
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        except ValueError as e:  # also bad UTF-8
            return self.rpc(None, error=RpcError(-32700, f"parse error: {e}"), status=400)
        if not isinstance(message, dict):
            return self.rpc(None, error=RpcError(-32600, "one JSON-RPC object per POST"),
                            status=400)
        method, id_, params = message.get("method"), message.get("id"), message.get("params")
        params = {} if params is None else params
        try:
            if not isinstance(params, dict):
                raise RpcError(-32602, "params must be an object")
            if method == "initialize" and "id" in message:
                session_id, result = bridge.initialize(params, query)
                return self.rpc(id_, result, headers=[("Mcp-Session-Id", session_id)])
            session = self.session()
            if session is None:
                return
            if method is None or "id" not in message:  # a notification or a client's answer
                return self.send(202)
            self.rpc(id_, bridge.answer(session, method, params))
        except RpcError as e:
            self.rpc(id_, error=e)
        except Exception as e:  # a bug here: answer, log, and keep serving
            log(f"{method} failed:\n{traceback.format_exc()}")
            self.rpc(id_, error=RpcError(-32603, f"internal error: {e!r}"))

    def do_DELETE(self):
        if self.query() is None or self.session() is None:
            return
        with self.server.bridge.lock:
            self.server.bridge.sessions.pop(self.headers.get("Mcp-Session-Id"), None)
        self.send(200)

    def do_GET(self):  # no stream of server-initiated messages
        if self.query() is not None:
            self.send(405, headers=[("Allow", "POST, DELETE")])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--catalog", required=True, help="discbench's catalog (JSON)")
    parser.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0: any free)")
    args = parser.parse_args()
    try:
        with open(args.catalog, "rb") as f:
            raw = f.read()
    except OSError as e:
        log(f"cannot read the catalog: {e}")
        sys.exit(2)
    host, _, port = args.listen.rpartition(":")
    bridge = Bridge()
    server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
    server.daemon_threads = True
    server.bridge = bridge
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"http://{server.server_address[0]}:{server.server_address[1]}/mcp", flush=True)
    threading.Thread(target=bridge.load, args=(raw,), daemon=True).start()

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:  # the parent closes stdin to stop the bridge
        while os.read(sys.stdin.fileno(), 4096):
            pass
    except (OSError, ValueError, SystemExit, KeyboardInterrupt):
        pass
    log("stopping")
    os._exit(0)  # no slow teardown of the parsed catalog; nothing is left to flush


if __name__ == "__main__":
    main()
