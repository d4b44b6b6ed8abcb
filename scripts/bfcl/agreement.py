#!/usr/bin/env python3
"""Model outputs for BFCL entries, made from the answer keys with deliberate
corruptions, and BFCL's own checker's verdicts on them.

    agreement.py generate DATA OUT [--every N]
        DATA: BFCL's data directory, or `installed` for the installed bfcl-eval's.
        Writes OUT/outputs/<model>/BFCL_v4_<category>_result.json: BFCL's result
        format for function-calling models (`{"id", "result"}` per line, `result` a list
        of `{name: "arguments as JSON"}` or text), with a `variant` field naming how
        the line was made. With --every N only every N-th entry of each category is
        used, and each entry that makes a kind of output that no entry before it
        in the sample makes; those entries are copied to OUT/data/ in BFCL's layout so that
        `discbench import bfcl --data OUT/data` converts exactly them.

    agreement.py compare OUT DISCBENCH
        BFCL's verdicts beside discbench's (`discbench score-bfcl --verdicts
        DISCBENCH/<model>.json`, `--underscore-to-dot` for `underscore`): the
        agreement per category, and every disagreement.

    agreement.py check DATA OUT
        Runs BFCL's checker (bfcl-eval's `_evaluate_single_ast_entry` and
        `_evaluate_single_relevance_entry`, unchanged) on every line of
        OUT/outputs/ and writes OUT/verdicts/<model>/<category>.json: `{"id",
        "variant", "valid", "error_type"}` per line, in the same order.

Two model settings: `underscore` (BFCL's `underscore_to_dot`: dotted names are
sent with `_`, as for OpenAI function-calling models) and `dot` (names as written).
bfcl-eval's model table imports every provider SDK, so it is replaced by a table of
these two entries before the checker is imported; nothing else of BFCL is changed.
Needs bfcl-eval 2026.3.23 installed (see requirements.txt) for `check` and for
`generate installed`.
"""

import copy
import json
import random
import shutil
import sys
import types
import zlib
from dataclasses import dataclass
from pathlib import Path

CATEGORIES = [
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "irrelevance",
    "live_irrelevance",
]
MODELS = {"underscore": True, "dot": False}
PINNED = "2026.3.23"


def installed_data():
    import importlib.util

    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None:
        sys.exit("bfcl-eval is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def find(data, category):
    found = sorted(data.glob(f"BFCL_v*_{category}.json"))
    found = [p for p in found if p.name[len("BFCL_v"):-len(f"_{category}.json")].isdigit()]
    if len(found) != 1:
        sys.exit(f"{data}: expected one BFCL file for {category}, found {len(found)}")
    return found[0]


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_lines(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- outputs


def first(opts):
    for v in opts:
        if v != "":
            return v
    return None


def instantiate(value):
    """An answer value made concrete: a dict of accepted lists gets each list's first
    value, a list of such dicts likewise."""
    if isinstance(value, dict):
        return {k: first(o) for k, o in value.items() if isinstance(o, list) and first(o) is not None}
    if isinstance(value, list) and value and all(isinstance(d, dict) for d in value):
        return [instantiate(d) for d in value]
    return value


def canonical(params, schema, all_optional=False):
    required = set(schema.get("required", []))
    props = schema.get("properties", {})
    out = {}
    for p, opts in params.items():
        if p not in props:
            continue
        v = first(opts)
        if v is None:
            if p in required:
                out[p] = ""
            continue
        if "" in opts and p not in required and not all_optional:
            continue
        ptype = props[p].get("type")
        out[p] = instantiate(v) if ptype in ("dict", "array", "tuple") else v
    return out


def wire(name, underscore):
    return name.replace(".", "_") if underscore and "." in name else name


def fc(calls, underscore):
    """BFCL's result format for a function-calling model; a name given as
    `("raw", name)` is sent as it is."""
    return [
        {(n[1] if isinstance(n, tuple) else wire(n, underscore)): json.dumps(a, ensure_ascii=False)}
        for n, a in calls
    ]


def other_type(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(v)
    if isinstance(v, str):
        return 12345
    if isinstance(v, list):
        return "a, b"
    if isinstance(v, dict):
        return [v]
    return "x"


def outside(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 7919
    if isinstance(v, float):
        return v + 1.25
    if isinstance(v, str):
        return v + " qzx"
    if isinstance(v, list):
        return v + (copy.deepcopy(v[-1:]) if v else ["qzx"])
    if isinstance(v, dict):
        if not v:
            return {"qzx": 1}
        k = sorted(v)[0]
        return {**v, k: outside(v[k])}
    return "qzx"


def normalised(s):
    """A string BFCL's standardisation maps to the same text: other case, spaces
    as underscores, a trailing full stop."""
    return s.upper().replace(" ", "_") + "."


def ast_variants(entry, answer, rng, underscore):
    functions = {f["name"]: f for f in entry["function"]}
    gold = []
    for call in answer:
        ((name, params),) = call.items()
        schema = functions[name]["parameters"] if name in functions else {}
        gold.append((name, params, schema))
    calls = [(n, canonical(p, s)) for n, p, s in gold]
    out = [("gold", calls)]
    full = [(n, canonical(p, s, all_optional=True)) for n, p, s in gold]
    if full != calls:
        out.append(("gold_all_optional", full))
    if len(calls) > 1:
        out.append(("shuffled", list(reversed(calls))))
        out.append(("count_less", calls[:-1]))
    out.append(("count_more", calls + [calls[0]]))
    out.append(("empty", []))
    out.append(("text", "I am not sure which function to call."))
    k = rng.randrange(len(calls))
    name, args = calls[k]
    _, params, schema = gold[k]
    props = schema.get("properties", {})
    required = set(schema.get("required", []))

    def with_args(new_args, new_name=None):
        c = list(calls)
        c[k] = (new_name or name, new_args)
        return c

    out.append(("wrong_function", with_args(args, name + "_v2")))
    others = [f for f in functions if f != name]
    if others:
        out.append(("other_function", with_args(args, rng.choice(sorted(others)))))
    if "." in name:
        # The other spelling of a dotted name than the model's setting expects.
        spelling = name if underscore else name.replace(".", "_")
        out.append(("name_other_spelling", with_args(args, ("raw", spelling))))
    out.append(("extra_parameter", with_args({**args, "qzx_extra": 1})))
    unlisted = [p for p in props if p not in params]
    if unlisted:
        p = rng.choice(sorted(unlisted))
        out.append(("schema_parameter_not_in_answer", with_args({**args, p: "qzx"})))
    req = [p for p in args if p in required]
    if req:
        p = rng.choice(sorted(req))
        out.append(("missing_required", with_args({q: v for q, v in args.items() if q != p})))
    opt = [p for p in args if p not in required]
    if opt:
        p = rng.choice(sorted(opt))
        out.append(("missing_optional", with_args({q: v for q, v in args.items() if q != p})))
    given = sorted(args)
    if given:
        p = rng.choice(given)
        out.append(("wrong_type", with_args({**args, p: other_type(args[p])})))
        p = rng.choice(given)
        out.append(("value_outside", with_args({**args, p: outside(args[p])})))
    for p in given:
        v = args[p]
        t = props.get(p, {}).get("type")
        if t == "float" and isinstance(v, float) and v.is_integer():
            out.append(("int_for_float", with_args({**args, p: int(v)})))
            break
    for p in given:
        if props.get(p, {}).get("type") == "integer" and isinstance(args[p], int) and not isinstance(args[p], bool):
            out.append(("float_for_int", with_args({**args, p: float(args[p])})))
            break
    strings = [p for p in given if isinstance(args[p], str) and args[p].strip()]
    if strings:
        p = rng.choice(strings)
        out.append(("string_normalised", with_args({**args, p: normalised(args[p])})))
        out.append(("string_other_words", with_args({**args, p: args[p] + " please"})))
    lists = [p for p in given if isinstance(args[p], list) and any(isinstance(x, str) for x in args[p])]
    if lists:
        p = rng.choice(lists)
        out.append(
            ("list_string_normalised",
             with_args({**args, p: [normalised(x) if isinstance(x, str) else x for x in args[p]]}))
        )
        out.append(("list_reversed", with_args({**args, p: list(reversed(args[p]))})))
    dicts = [p for p in given if isinstance(args[p], dict) and args[p]]
    if dicts:
        p = rng.choice(dicts)
        d = args[p]
        key = rng.choice(sorted(d))
        out.append(("dict_key_missing", with_args({**args, p: {q: v for q, v in d.items() if q != key}})))
        out.append(("dict_key_extra", with_args({**args, p: {**d, "qzx": 1}})))
        if isinstance(d[key], str):
            out.append(("dict_string_normalised", with_args({**args, p: {**d, key: normalised(d[key])}})))
    list_dicts = [p for p in given if isinstance(args[p], list) and args[p] and all(isinstance(x, dict) for x in args[p])]
    if list_dicts:
        p = rng.choice(list_dicts)
        out.append(("list_of_dicts_shorter", with_args({**args, p: args[p][:-1]})))
    return out


def relevance_variants(entry, rng):
    f = entry["function"][0] if entry["function"] else {"name": "lookup", "parameters": {}}
    schema = f.get("parameters", {})
    args = {p: "x" for p in schema.get("required", [])}
    return [
        ("text", "I cannot help with that using these functions."),
        ("empty", []),
        ("call", [(f["name"], args)]),
        ("call_unknown_function", [("no_such_function", {})]),
    ]


def variants_of(e, answers, relevance, underscore):
    rng = random.Random(zlib.crc32(f"{e['id']}/{'underscore' if underscore else 'dot'}".encode()))
    if relevance:
        return relevance_variants(e, rng)
    return ast_variants(e, answers[e["id"]]["ground_truth"], rng, underscore)


def sample(entries, answers, relevance, every):
    """Every `every`-th entry, and each entry that makes a kind of output none of
    the entries before it in the sample makes (so that every kind is in it)."""
    if every == 1:
        return entries
    chosen, seen = [], set()
    for i, e in enumerate(entries):
        kinds = {v for v, _ in variants_of(e, answers, relevance, True)}
        if i % every == 0 or kinds - seen:
            chosen.append(e)
            seen |= kinds
    return chosen


def generate(data, out, every):
    if data == "installed":
        data = installed_data()
    data = Path(data)
    out = Path(out)
    for category in CATEGORIES:
        qfile = find(data, category)
        entries = read_lines(qfile)
        relevance = "irrelevance" in category
        answers = {} if relevance else {a["id"]: a for a in read_lines(data / "possible_answer" / qfile.name)}
        chosen = sample(entries, answers, relevance, every)
        if every > 1:
            write_lines(out / "data" / qfile.name, chosen)
            if not relevance:
                write_lines(out / "data" / "possible_answer" / qfile.name, [answers[e["id"]] for e in chosen])
        for model, underscore in MODELS.items():
            rows = []
            for e in chosen:
                variants = variants_of(e, answers, relevance, underscore)
                for variant, calls in variants:
                    result = calls if isinstance(calls, str) else fc(calls, underscore)
                    rows.append({"id": e["id"], "variant": variant, "result": result})
                if relevance:
                    rows.append({"id": e["id"], "variant": "arguments_not_json",
                                 "result": [{e["function"][0]["name"] if e["function"] else "f": "{not json"}]})
                else:
                    ((name, _),) = answers[e["id"]]["ground_truth"][0].items()
                    rows.append({"id": e["id"], "variant": "arguments_not_json",
                                 "result": [{wire(name, underscore): "{not json"}]})
                    rows.append({"id": e["id"], "variant": "arguments_not_object",
                                 "result": [{wire(name, underscore): "[1, 2]"}]})
            write_lines(out / "outputs" / model / f"{qfile.stem}_result.json", rows)


# ---------------------------------------------------------------- BFCL's checker


def load_checker():
    """bfcl-eval's checker, with its model table replaced by two entries."""
    from importlib.metadata import version

    if version("bfcl-eval") != PINNED:
        sys.exit(f"bfcl-eval {version('bfcl-eval')} is installed; the verdicts are pinned to {PINNED}")

    @dataclass
    class Config:
        underscore_to_dot: bool

    table = types.ModuleType("bfcl_eval.constants.model_config")
    table.MODEL_CONFIG_MAPPING = {m: Config(u) for m, u in MODELS.items()}
    sys.modules["bfcl_eval.constants.model_config"] = table
    import bfcl_eval.eval_checker.eval_runner as runner
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler

    class Handler:
        """BFCL's OpenAI handler's own decode_ast, in function-calling mode (its
        constructor would open an API client)."""

        is_fc_model = True

        def decode_ast(self, result, language, has_tool_call_tag):
            return OpenAICompletionsHandler.decode_ast(self, result, language, has_tool_call_tag)

    return runner, Handler(), Language, ReturnFormat


def check(data, out):
    runner, handler, Language, ReturnFormat = load_checker()
    if data == "installed":
        data = installed_data()
    data = Path(data)
    out = Path(out)
    for category in CATEGORIES:
        qfile = find(data, category)
        entries = {e["id"]: e for e in read_lines(qfile)}
        relevance = "irrelevance" in category
        answers = {} if relevance else {a["id"]: a for a in read_lines(data / "possible_answer" / qfile.name)}
        for model in MODELS:
            rows = []
            for line in read_lines(out / "outputs" / model / f"{qfile.stem}_result.json"):
                prompt = copy.deepcopy(entries[line["id"]])
                try:
                    if relevance:
                        r = runner._evaluate_single_relevance_entry(
                            handler, line["id"], line["result"], prompt, model, category
                        )
                    else:
                        r = runner._evaluate_single_ast_entry(
                            handler,
                            line["id"],
                            line["result"],
                            answers[line["id"]]["ground_truth"],
                            prompt,
                            model,
                            category,
                            language=Language.PYTHON,
                            return_format=ReturnFormat.PYTHON,
                            has_tool_call_tag=False,
                        )
                    valid, error = bool(r["valid"]), r.get("error_type")
                except Exception as e:  # BFCL's checker raised: the whole run would stop
                    valid, error = None, f"checker raised {type(e).__name__}: {e}"
                rows.append({"id": line["id"], "variant": line["variant"], "valid": valid, "error_type": error})
            write_lines(out / "verdicts" / model / f"{category}.json", rows)


def compare(out, discbench_dir):
    """BFCL's verdicts (OUT/verdicts) beside discbench's (`score-bfcl --verdicts`,
    DISCBENCH/<model>.json): agreement per category, and every disagreement."""
    out = Path(out)
    rows = {}
    disagreements = []
    for model in MODELS:
        mine = {}
        for v in read_lines(Path(discbench_dir) / f"{model}.json"):
            mine[(Path(v["file"]).name, v["line"])] = v
        for vfile in sorted((out / "verdicts" / model).glob("*.json")):
            category = vfile.stem
            rfile = find(out / "outputs" / model, f"{category}_result").name
            for i, b in enumerate(read_lines(vfile), start=1):
                d = mine.get((rfile, i))
                if d is None:
                    continue  # an entry the import excluded
                r = rows.setdefault(category, [0, 0])
                r[0] += 1
                if d["valid"] == b["valid"]:
                    r[1] += 1
                else:
                    disagreements.append((model, category, b["id"], b["variant"], b["valid"], b["error_type"], d.get("reason")))
    total = [0, 0]
    print("| category | outputs | same verdict | agreement |")
    print("|---|---|---|---|")
    for category in CATEGORIES:
        if category in rows:
            n, same = rows[category]
            total[0] += n
            total[1] += same
            print(f"| {category} | {n:,} | {same:,} | {100 * same / n:.2f}% |")
    print(f"| all | {total[0]:,} | {total[1]:,} | {100 * total[1] / max(total[0], 1):.2f}% |")
    print(f"\n{len(disagreements)} disagreement(s)")
    for d in disagreements:
        print("  " + " | ".join(str(x) for x in d))


def main(argv):
    if len(argv) >= 3 and argv[0] == "generate":
        every = 1
        if "--every" in argv:
            every = int(argv[argv.index("--every") + 1])
        generate(argv[1], argv[2], every)
    elif len(argv) == 3 and argv[0] == "check":
        check(argv[1], argv[2])
    elif len(argv) == 3 and argv[0] == "compare":
        compare(argv[1], argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
