#!/usr/bin/env python3
"""Checks discbench's HTTP request bodies against the official Python SDKs' request types.

Reads JSON lines, each {"api": "chat"|"responses"|"anthropic"|"gemini", "where": LABEL,
"body": {...}}, from a file or `-` (stdin), and validates each body with pydantic against:

  chat       openai.types.chat.completion_create_params.CompletionCreateParamsNonStreaming
  responses  openai.types.responses.response_create_params.ResponseCreateParamsNonStreaming
  anthropic  anthropic.types.message_create_params.MessageCreateParamsNonStreaming
  gemini     the REST generateContent body, mapped onto google.genai.types (see gemini_type)

The SDKs' parameter types are TypedDicts, which pydantic validates leniently by default.
Before building a validator, every TypedDict reachable from the root type is made strict:
`__pydantic_config__` gets extra='forbid' (unless the SDK itself chose an `extra`, as
anthropic's InputSchemaTyped does with 'allow': a JSON schema may hold any key), and
every Iterable/Sequence in an annotation becomes a List, since pydantic checks an
Iterable's items only when the result is iterated. A pydantic model in a request type
(anthropic takes its response content blocks back as input: their base model allows
unknown keys, to read newer answers) is closed the same way, and rebuilt. Bodies are
validated from JSON in strict mode: no "1" for 1, no 0 for false.

Prints `<line> <api> <where>: <errors>` for every refused body, then `N bodies, M refused`.
Exit 0 when all pass, 1 when any is refused, 2 on bad input. `--self-test` proves that
valid bodies pass and broken ones are refused, for each api.
"""

import argparse
import collections.abc
import json
import sys
import types
import typing
import warnings

import typing_extensions as te
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

_SEQUENCES = {collections.abc.Iterable, collections.abc.Sequence, collections.abc.Collection,
              collections.abc.MutableSequence, list}
_MAPPINGS = {collections.abc.Mapping, collections.abc.MutableMapping, dict}
_WRAPPERS = {te.Required, te.NotRequired, te.ReadOnly}


def strict_type(tp, seen):
    """`tp` with each TypedDict in it closed to unknown keys and each Iterable a List."""
    if te.is_typeddict(tp):
        if tp not in seen:
            seen.add(tp)
            hints = typing.get_type_hints(tp, include_extras=True)
            config = dict(tp.__dict__.get("__pydantic_config__") or {})
            config.setdefault("extra", "forbid")
            tp.__pydantic_config__ = ConfigDict(**config)
            tp.__annotations__ = {k: strict_type(v, seen) for k, v in hints.items()}
        return tp
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp not in seen:
            seen.add(tp)
            for field in tp.model_fields.values():
                field.annotation = strict_type(field.annotation, seen)
            tp.model_config = ConfigDict(**{**tp.model_config, "extra": "forbid"})
            tp.model_rebuild(force=True)
        return tp
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        for m in tp.__metadata__:  # the openai SDK renames a key on the wire this way
            if getattr(m, "alias", None):
                raise SystemExit(f"{tp}: aliased keys are not handled here")
        return typing.Annotated[(strict_type(args[0], seen),) + tuple(tp.__metadata__)]
    if origin in _WRAPPERS:
        return origin[strict_type(args[0], seen)]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(strict_type(a, seen) for a in args)]
    if origin in _SEQUENCES:
        return typing.List[strict_type(args[0], seen)] if args else list
    if origin in _MAPPINGS and args:
        return typing.Dict[strict_type(args[0], seen), strict_type(args[1], seen)]
    return tp


def gemini_type():
    """The REST generateContent body, field by field, as google-genai's own models.

    The REST body is {contents, tools, toolConfig, systemInstruction, generationConfig,
    safetySettings, cachedContent} (the model is in the URL). The SDK's
    GenerateContentParameters is shaped differently (model, contents, and a config that
    flattens generationConfig's fields beside tools, system_instruction, tool_config), so
    this validates each REST field against the SDK type that models it: Content, Tool,
    ToolConfig, GenerationConfig, SafetySetting. google-genai's base model already has
    extra='forbid' and a camelCase alias generator with populate_by_name=True, so each
    key may be camelCase or snake_case (as the REST API's JSON parser allows too), and
    an unknown key at any depth is refused.
    """
    from google.genai import _common, types as g

    class GenerateContentRequest(_common.BaseModel):
        contents: typing.List[g.Content]
        tools: typing.Optional[typing.List[g.Tool]] = None
        tool_config: typing.Optional[g.ToolConfig] = None
        system_instruction: typing.Optional[g.Content] = None
        generation_config: typing.Optional[g.GenerationConfig] = None
        safety_settings: typing.Optional[typing.List[g.SafetySetting]] = None
        cached_content: typing.Optional[str] = None

    return GenerateContentRequest


def root_type(api):
    if api == "chat":
        from openai.types.chat import completion_create_params as m
        return m.CompletionCreateParamsNonStreaming
    if api == "responses":
        from openai.types.responses import response_create_params as m
        return m.ResponseCreateParamsNonStreaming
    if api == "anthropic":
        from anthropic.types import message_create_params as m
        return m.MessageCreateParamsNonStreaming
    return gemini_type()


APIS = ("chat", "responses", "anthropic", "gemini")
_adapters = {}


def validate(api, body):
    """The errors that refuse `body`, as one line; None when it passes."""
    if api not in _adapters:
        root = root_type(api)  # google-genai's models are closed already: left as they are
        _adapters[api] = TypeAdapter(root if api == "gemini" else strict_type(root, set()))
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            _adapters[api].validate_json(json.dumps(body), strict=True)
    except ValidationError as e:
        return summary(e.errors(include_url=False))
    # google-genai takes an enum value it does not know with only a warning (to keep
    # working with newer servers): here that refuses the body.
    return "; ".join(str(w.message) for w in warned) + " [SDK warnings]" if warned else None


def _arm(part):
    # A union arm that is not a TypedDict shows in a location as e.g. `str`, `list[...]`.
    return isinstance(part, str) and ("[" in part or part in ("str", "int", "float", "bool", "none"))


def _drop_arms(errors, rejects):
    """`errors` less those of the union arms (TypedDicts and models, named by class in a
    location) that `rejects` tells were not meant; all of them if nothing would be left."""
    off = {e["loc"][:-1] for e in errors if len(e["loc"]) > 1 and isinstance(e["loc"][-2], str)
           and e["loc"][-2][:1].isupper() and not _arm(e["loc"][-2]) and rejects(e)}
    return [e for e in errors if not any(e["loc"][:len(p)] == p for p in off)] or errors


def summary(errors, most=4):
    """The errors that matter, in one line. A union (a tool, an input item, a content
    block) reports every arm it tried: arms whose `type` tag differs go first, then arms
    with another literal that differs (`role`, `name`), then scalar arms (a `str`
    instead of a list), each only while something is left."""
    kept = _drop_arms(errors, lambda e: e["loc"][-1] == "type" and e["type"] in ("literal_error", "missing"))
    kept = _drop_arms(kept, lambda e: e["type"] == "literal_error")
    kept = [e for e in kept if not _arm(e["loc"][-1] if e["loc"] else None)] or kept
    shown = []
    for e in kept[:most]:
        path = ".".join(str(p) for p in e["loc"] if not _arm(p)) or "(body)"
        shown.append(f"{path}: {e['msg']}")
    more = f" (+{len(kept) - most} more)" if len(kept) > most else ""
    return "; ".join(shown) + more + f" [{len(errors)} raw errors]"


def run(lines):
    count = refused = 0
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            api, where, body = rec["api"], rec.get("where", ""), rec["body"]
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            print(f"{n}: not a {{api, where, body}} JSON line: {e}", file=sys.stderr)
            return 2
        if api not in APIS:
            print(f"{n}: unknown api {api!r} (one of {', '.join(APIS)})", file=sys.stderr)
            return 2
        count += 1
        err = validate(api, body)
        if err:
            refused += 1
            print(f"{n} {api} {where}: {err}")
    print(f"{count} bodies, {refused} refused")
    return 1 if refused else 0


PARAMS = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
FN = {"type": "function", "name": "f", "description": "d", "parameters": PARAMS, "strict": False}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": PARAMS}}]}
RESP = {"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "tools": [FN]}
ANTH = {"model": "m", "max_tokens": 10,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "tools": [{"name": "f", "input_schema": PARAMS}]}
GEM = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
       "tools": [{"functionDeclarations": [{"name": "f", "parametersJsonSchema": PARAMS}]}]}


def changed(body, path, value=None, drop=False):
    """A deep copy of `body` with the key at `path` set to `value`, or removed."""
    body = json.loads(json.dumps(body))
    at = body
    for p in path[:-1]:
        at = at[p]
    if drop:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    return body


# (api, what, body, passes?)
CASES = [
    ("chat", "minimal body", CHAT, True),
    ("chat", "unknown top-level key", changed(CHAT, ["bogus"], 1), False),
    ("chat", "unknown key in a tool's function", changed(CHAT, ["tools", 0, "function", "bogus"], 1), False),
    ("chat", "unknown key in a message", changed(CHAT, ["messages", 0, "bogus"], 1), False),
    ("chat", "missing model", changed(CHAT, ["model"], drop=True), False),
    ("chat", "missing a tool's function name", changed(CHAT, ["tools", 0, "function", "name"], drop=True), False),
    ("chat", "max_tokens a string", changed(CHAT, ["max_tokens"], "10"), False),
    ("responses", "minimal body", RESP, True),
    ("responses", "unknown top-level key", changed(RESP, ["bogus"], 1), False),
    ("responses", "unknown key in a function tool", changed(RESP, ["tools", 0, "bogus"], 1), False),
    ("responses", "unknown key in a content block", changed(RESP, ["input", 0, "content", 0, "bogus"], 1), False),
    ("responses", "missing a tool's name", changed(RESP, ["tools", 0, "name"], drop=True), False),
    ("responses", "store a string", changed(RESP, ["store"], "false"), False),
    # The SDK's FunctionToolParam has `strict: Required[Optional[bool]]` (null allowed,
    # absence not), while the function inside a namespace tool (namespace_tool_param's
    # ToolFunction) has a plain optional `strict`: so a top-level function tool without
    # `strict` is refused here and a namespaced one is not.
    ("responses", "top-level function tool without strict", changed(RESP, ["tools", 0, "strict"], drop=True), False),
    ("responses", "function tool with strict null", changed(RESP, ["tools", 0, "strict"], None), True),
    ("responses", "namespace function without strict",
     changed(RESP, ["tools"], [{"type": "namespace", "name": "ns", "description": "d",
                                "tools": [{"type": "function", "name": "f", "parameters": PARAMS}]}]), True),
    ("responses", "unknown key in a namespace's function",
     changed(RESP, ["tools"], [{"type": "namespace", "name": "ns", "description": "d",
                                "tools": [{"type": "function", "name": "f", "bogus": 1}]}]), False),
    ("anthropic", "minimal body", ANTH, True),
    ("anthropic", "unknown top-level key", changed(ANTH, ["bogus"], 1), False),
    ("anthropic", "unknown key in a tool", changed(ANTH, ["tools", 0, "bogus"], 1), False),
    ("anthropic", "extra key in a tool's input_schema (JSON schema: allowed)",
     changed(ANTH, ["tools", 0, "input_schema", "additionalProperties"], False), True),
    ("anthropic", "unknown key in a content block", changed(ANTH, ["messages", 0, "content", 0, "bogus"], 1), False),
    ("anthropic", "missing max_tokens", changed(ANTH, ["max_tokens"], drop=True), False),
    ("anthropic", "missing a tool's input_schema", changed(ANTH, ["tools", 0, "input_schema"], drop=True), False),
    ("anthropic", "max_tokens a float", changed(ANTH, ["max_tokens"], 10.5), False),
    ("gemini", "minimal body", GEM, True),
    ("gemini", "unknown top-level key", changed(GEM, ["bogus"], 1), False),
    ("gemini", "unknown key in a function declaration",
     changed(GEM, ["tools", 0, "functionDeclarations", 0, "bogus"], 1), False),
    ("gemini", "unknown key in a part", changed(GEM, ["contents", 0, "parts", 0, "bogus"], 1), False),
    ("gemini", "missing contents", changed(GEM, ["contents"], drop=True), False),
    ("gemini", "temperature a string", changed(GEM, ["generationConfig"], {"temperature": "hot"}), False),
    ("gemini", "unknown enum value (the SDK only warns)",
     changed(GEM, ["toolConfig"], {"functionCallingConfig": {"mode": "SOMETIMES"}}), False),
]


def self_test():
    failed = 0
    for api, what, body, passes in CASES:
        err = validate(api, body)
        ok = (err is None) == passes
        failed += not ok
        verdict = "passes" if err is None else f"refused: {err}"
        print(f"{'ok  ' if ok else 'FAIL'} {api}: {what}: {verdict}")
    print(f"{len(CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", help="JSON-lines file, or - for stdin")
    ap.add_argument("--self-test", action="store_true", help="check that the checks can fail")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.path:
        ap.error("a path (or -) is needed")
    try:
        if a.path == "-":
            return run(sys.stdin.read().splitlines())
        with open(a.path, encoding="utf-8") as f:
            return run(f.read().splitlines())
    except (OSError, UnicodeDecodeError) as e:
        print(f"{a.path}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
