#!/usr/bin/env python3
"""Model outputs for BFCL's multi-turn entries, made from the answer keys with
deliberate corruptions, and BFCL's own checker's verdicts on them.

    multi_turn_agreement.py generate DATA OUT [--every N]
        DATA: BFCL's data directory, or `installed` for the installed bfcl-eval's.
        Writes OUT/outputs/fc/BFCL_v4_<category>_result.json for the four
        multi-turn categories, in the result format of BFCL's OpenAI Chat
        Completions handler in function-calling mode: `{"id", "result"}` per line,
        `result` a list of turns, a turn a list of steps (one step per query to the
        model), a step a list of `{function name: "arguments as JSON"}` or a text.
        Each line also has a `variant` naming how it was made; an entry gets several
        lines, one per variant. With --every N only every N-th entry of each
        category is used, and each entry that makes a kind of output that no entry
        before it in the sample makes; those entries are copied to OUT/data/ in
        BFCL's layout (with possible_answer/ and multi_turn_func_doc/) so that
        `discbench import bfcl --data OUT/data` converts exactly them.

    multi_turn_agreement.py check DATA OUT
        Runs BFCL's multi-turn checker (bfcl-eval's `_evaluate_single_multi_turn_entry`,
        unchanged) on every line of OUT/outputs/fc/ and writes
        OUT/verdicts/fc/<category>.json: `{"id", "variant", "valid", "error_type"}`
        per line, in the same order.

    multi_turn_agreement.py compare OUT DISCBENCH
        BFCL's verdicts beside discbench's (`discbench score-bfcl` writes
        DISCBENCH/<category>.json, one `{"id", "variant", "valid", ...}` per line):
        the agreement per category, and every disagreement.

BFCL judges a multi-turn entry by executing the model's calls and the answer key's
on two sets of its environment classes, turn by turn: after each turn whose answer
is not empty, the two states must be equal and every result of the answer's calls
of that turn must be among the results of the model's calls so far. The variants
below are built to probe each part of that rule (see the notes at `VARIANTS`).

bfcl-eval's model table imports every provider SDK, so it is replaced by an empty
table before the checker is imported; nothing else of BFCL is changed. Needs
bfcl-eval 2026.3.23 and mpmath installed (see requirements.txt) for `check` and for
`generate installed`.
"""

import ast
import copy
import json
import random
import shutil
import sys
import time
import types
import zlib
from pathlib import Path

CATEGORIES = [
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
]
MODEL = "fc"  # the one model setting: function calling, as BFCL's OpenAI handler
PINNED = "2026.3.23"

# What the made-up model says when it has no (more) calls to make.
DONE = "Done. Is there anything else I can help with?"
ASK = "I can't do that with the information and tools I have. Could you tell me more?"

# Functions of the eight multi-turn classes that change no compared state and draw
# no random number (read from the classes' code: a random draw would shift every
# later draw of that instance, so it counts as a change). Used to make extra calls
# that must not matter.
READ_ONLY = {
    # GorillaFileSystem
    "cat", "diff", "du", "find", "grep", "ls", "pwd", "sort", "tail", "wc",
    # MathAPI (stateless)
    "absolute_value", "add", "divide", "imperial_si_conversion", "logarithm",
    "max_value", "mean", "min_value", "multiply", "percentage", "power",
    "round_number", "si_unit_conversion", "square_root", "standard_deviation",
    "subtract", "sum_values",
    # MessageAPI
    "get_message_stats", "get_user_id", "list_users", "message_get_login_status",
    "search_messages", "view_messages_sent",
    # TwitterAPI
    "get_tweet", "get_tweet_comments", "get_user_stats", "get_user_tweets",
    "list_all_following", "posting_get_login_status", "search_tweets",
    # TicketAPI
    "get_ticket", "get_user_tickets", "ticket_get_login_status",
    # TradingBot
    "filter_stocks_by_price", "get_account_info", "get_available_stocks",
    "get_current_time", "get_order_details", "get_order_history", "get_stock_info",
    "get_symbol_by_name", "get_transaction_history", "get_watchlist",
    "notify_price_change", "trading_get_login_status",
    # TravelAPI
    "compute_exchange_rate", "contact_customer_support", "get_all_credit_cards",
    "get_booking_history", "get_budget_fiscal_year", "get_credit_card_balance",
    "get_flight_cost", "get_nearest_airport_by_city", "list_all_airports",
    "retrieve_invoice", "travel_get_login_status", "verify_traveler_information",
    # VehicleControlAPI
    "check_tire_pressure", "displayCarStatus", "display_log", "estimate_distance",
    "estimate_drive_feasibility_by_mileage", "find_nearest_tire_shop",
    "gallon_to_liter", "get_outside_temperature_from_weather_com",
    "get_zipcode_based_on_city", "liter_to_gallon",
}

# One read-only call per class that works in any state (or errors harmlessly).
PROBE = {
    "GorillaFileSystem": ("pwd", {}),
    "MathAPI": ("add", {"a": 2, "b": 3}),
    "MessageAPI": ("list_users", {}),
    "TwitterAPI": ("posting_get_login_status", {}),
    "TicketAPI": ("ticket_get_login_status", {}),
    "TradingBot": ("get_current_time", {}),
    "TravelAPI": ("list_all_airports", {}),
    "VehicleControlAPI": ("check_tire_pressure", {}),
}

# One call per class that changes its compared state in any state (no login
# needed, no precondition that can fail). TwitterAPI, TicketAPI and TradingBot have
# none (their changes need a login), MathAPI has no state.
CHANGE = {
    "GorillaFileSystem": ("touch", {"file_name": "qzx_scratch.txt"}),
    "MessageAPI": ("add_contact", {"user_name": "Qzx Scratch"}),
    "TravelAPI": ("authenticate_travel", {
        "client_id": "qzx", "client_secret": "qzx", "refresh_token": "qzx",
        "grant_type": "read_write", "user_first_name": "Qzx", "user_last_name": "Scratch",
    }),
    "VehicleControlAPI": ("set_navigation", {"destination": "1 Qzx Road, Nowhere, ZZ"}),
}

UNKNOWN = "qzx_unknown_function"


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
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_lines(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- answer keys


def parameter_orders(data):
    """Function name -> its parameter names in the doc's property order, from every
    doc file in DATA/multi_turn_func_doc/. A name documented twice with different
    parameters (the memory classes share some names) maps to None: it is an error
    only if a positional argument needs it."""
    orders = {}
    for path in sorted((data / "multi_turn_func_doc").glob("*.json")):
        for doc in read_lines(path):
            names = list(doc.get("parameters", {}).get("properties", {}))
            if doc["name"] in orders and orders[doc["name"]] != names:
                orders[doc["name"]] = None
            else:
                orders[doc["name"]] = names
    return orders


def lists_for_tuples(v):
    if isinstance(v, (tuple, list)):
        return [lists_for_tuples(x) for x in v]
    if isinstance(v, dict):
        return {k: lists_for_tuples(x) for k, x in v.items()}
    return v


def parse_call(text, orders):
    """An answer-key call string, e.g. "mv(source='a.txt', destination='tmp')", as
    (name, arguments dict, made from a positional argument?). A positional argument
    is named by the function's doc: the i-th one is the i-th documented parameter."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {text}")
    name = node.func.id
    args = {}
    if node.args:
        params = orders.get(name)
        if not params or len(params) < len(node.args):
            raise ValueError(f"cannot name the positional arguments of {text}")
        for i, a in enumerate(node.args):
            args[params[i]] = lists_for_tuples(ast.literal_eval(a))
    for k in node.keywords:
        if k.arg is None:
            raise ValueError(f"**kwargs in {text}")
        args[k.arg] = lists_for_tuples(ast.literal_eval(k.value))
    return name, args, bool(node.args)


# ---------------------------------------------------------------- outputs
#
# A call is (name, arguments dict). A step in the result is what BFCL's OpenAI
# handler stores for one query: the list of the model's tool calls, each
# `{name: arguments JSON string}`, or the model's text when it made no call.


def wire(call, arguments=None):
    """One tool call as the OpenAI handler stores it; `arguments` overrides the
    arguments text (to make it undecodable)."""
    name, args = call
    return {name: json.dumps(args, ensure_ascii=False) if arguments is None else arguments}


def step(calls):
    return [wire(c) for c in calls]


def turn(calls, text=DONE):
    """A turn as a model that makes all its calls at once and then answers in text."""
    return ([step(calls)] if calls else []) + [text]


def one_per_step(calls, text=""):
    return [[wire(c)] for c in calls] + [text]


def changed(v):
    """Another value of the same kind."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 3
    if isinstance(v, float):
        return v + 1.5
    if isinstance(v, str):
        return v + " qzx"
    if isinstance(v, list):
        return v[:-1] if len(v) > 1 else v + (v or ["qzx"])
    if isinstance(v, dict):
        if not v:
            return {"qzx": 1}
        k = next(iter(v))
        return {**v, k: changed(v[k])}
    return "qzx"


def integral_floats(v):
    """v with every float that is a whole number (20000.0) written as an int, or
    None if it has none."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list) and any(isinstance(x, float) and x.is_integer() for x in v):
        return [int(x) if isinstance(x, float) and x.is_integer() else x for x in v]
    return None


# The variants, in the order they are written for an entry. Intended verdicts:
#   valid    gold, gold_one_call_per_step, gold_no_text, positional_by_keyword,
#            unknown_function_added, extra_erroring_call, calls_split_across_steps,
#            undecodable_step_added, empty_turn_read_only_call, empty_turn_as_string,
#            duplicate_read_only_call
#   invalid  drop_call_first_turn, drop_call_last_turn, drop_call_random_turn,
#            argument_value_changed, call_moved_later, arguments_not_json,
#            arguments_json_array, arguments_empty_string, text_instead_of_calls,
#            empty_step_instead_of_calls, turn_as_string, empty_turn_state_change,
#            extra_turn, one_turn_fewer, result_string
#   either   int_for_float, float_for_int (valid unless a result echoes the number;
#            in bfcl-eval 2026.3.23's data no whole-number float of the answer keys
#            is echoed, so int_for_float is always valid there, while an int sent
#            as a float, e.g. an order id, often shows in a result),
#            call_moved_earlier (valid if the moved call changes no state),
#            empty_turn_does_next_turn, duplicate_call (valid if repeating the
#            calls leaves the same state)
#   (argument_value_changed and empty_turn_state_change are valid now and then: a
#   changed value that gives the same result, a change a later answer call undoes.)
VARIANTS = [
    "gold", "gold_one_call_per_step", "gold_no_text", "positional_by_keyword",
    "unknown_function_added", "extra_erroring_call", "drop_call_first_turn",
    "drop_call_last_turn", "drop_call_random_turn", "argument_value_changed",
    "int_for_float", "float_for_int", "call_moved_earlier", "call_moved_later",
    "calls_split_across_steps", "arguments_not_json", "arguments_json_array",
    "arguments_empty_string", "text_instead_of_calls", "empty_step_instead_of_calls",
    "undecodable_step_added", "turn_as_string", "empty_turn_read_only_call",
    "empty_turn_state_change", "empty_turn_does_next_turn", "empty_turn_as_string",
    "duplicate_read_only_call", "duplicate_call", "extra_turn", "one_turn_fewer",
    "result_string",
]


def variants_of(entry, answer, orders):
    """[(variant, result)] for one entry; `result` is BFCL's per-turn, per-step list
    (or, for result_string, a string)."""
    parsed = [[parse_call(c, orders) for c in t] for t in answer["ground_truth"]]
    turns = [[(n, a) for n, a, _ in t] for t in parsed]
    positional = any(p for t in parsed for _, _, p in t)
    classes = entry["involved_classes"]
    full = [i for i, t in enumerate(turns) if t]  # turns the checker judges
    empty = [i for i, t in enumerate(turns) if not t]  # turns it skips
    gold = [turn(t, DONE if t else ASK) for t in turns]

    def rng(variant):
        return random.Random(zlib.crc32(f"{entry['id']}/{variant}".encode()))

    def replace(i, new_turn, base=None):
        r = copy.deepcopy(gold if base is None else base)
        r[i] = new_turn
        return r

    def calls_with_args(variant, accept):
        """A random (turn, call, parameter) whose value `accept` takes, or None."""
        options = [(i, k, p) for i in full for k, (_, a) in enumerate(turns[i]) for p in a
                   if accept(a[p])]
        return rng(variant).choice(options) if options else None

    def with_argument(i, k, p, value):
        calls = copy.deepcopy(turns[i])
        calls[k][1][p] = value
        return replace(i, turn(calls))

    out = [
        ("gold", gold),
        # Every call in its own step, and "" as the text (as OpenAI's content can be).
        ("gold_one_call_per_step", [one_per_step(t) for t in turns]),
        # No text steps at all: a turn without calls is [].
        ("gold_no_text", [[step(t)] if t else [] for t in turns]),
    ]
    if positional:
        # The answer key passes one argument by position; the model names it (FC
        # has no positional arguments) and writes its arguments in reverse order.
        out.append(("positional_by_keyword", [
            turn([(n, dict(reversed(list(a.items())))) for n, a in t], DONE if t else ASK)
            for t in turns]))

    # Calls that fail cost nothing: a call to an unknown function in its own step,
    # or a call with an argument the function does not take in the same step.
    i = rng("unknown_function_added").choice(full)
    out.append(("unknown_function_added", replace(i, [step([(UNKNOWN, {"x": 1})])] + gold[i])))
    i = rng("extra_erroring_call").choice(full)
    name, args = turns[i][0]
    out.append(("extra_erroring_call", replace(
        i, [[wire((name, {**args, "qzx_extra": 1}))] + step(turns[i])] + [DONE])))

    # A call left out: a turn left without calls fails as empty, otherwise the state
    # or the results differ.
    i = full[0]
    out.append(("drop_call_first_turn", replace(i, turn(turns[i][1:]))))
    i = full[-1]
    out.append(("drop_call_last_turn", replace(i, turn(turns[i][:-1]))))
    r = rng("drop_call_random_turn")
    i = r.choice(full)
    k = r.randrange(len(turns[i]))
    out.append(("drop_call_random_turn", replace(i, turn(turns[i][:k] + turns[i][k + 1:]))))

    # An argument's value changed.
    pick = calls_with_args("argument_value_changed", lambda v: True)
    if pick:
        i, k, p = pick
        out.append(("argument_value_changed", with_argument(i, k, p, changed(turns[i][k][1][p]))))
    # 20000.0 sent as 20000, and 5 as 5.0: equal in Python, so the state is the same,
    # but a result that echoes the number prints it differently.
    pick = calls_with_args("int_for_float", lambda v: integral_floats(v) is not None)
    if pick:
        i, k, p = pick
        out.append(("int_for_float", with_argument(i, k, p, integral_floats(turns[i][k][1][p]))))
    pick = calls_with_args("float_for_int", lambda v: isinstance(v, int) and not isinstance(v, bool))
    if pick:
        i, k, p = pick
        out.append(("float_for_int", with_argument(i, k, p, float(turns[i][k][1][p]))))

    # A call made a turn early (the first call of turn j, at the end of turn j-1):
    # the results are collected over all turns so far, so this passes when the
    # call changes no state. A call made a turn late (the last of turn j, at the
    # start of turn j+1) leaves turn j short.
    options = [j for j in full if j > 0]
    if options:
        j = rng("call_moved_earlier").choice(options)
        r = replace(j - 1, turn(turns[j - 1] + turns[j][:1]))
        out.append(("call_moved_earlier", replace(j, turn(turns[j][1:]), r)))
    options = [j for j in full if j + 1 < len(turns)]
    if options:
        j = rng("call_moved_later").choice(options)
        r = replace(j + 1, turn(turns[j][-1:] + turns[j + 1]))
        out.append(("call_moved_later", replace(j, turn(turns[j][:-1]), r)))

    # A turn's calls over two steps.
    options = [i for i in full if len(turns[i]) > 1]
    if options:
        r = rng("calls_split_across_steps")
        i = r.choice(options)
        k = r.randint(1, len(turns[i]) - 1)
        out.append(("calls_split_across_steps",
                    replace(i, [step(turns[i][:k]), step(turns[i][k:]), DONE])))

    # Steps BFCL cannot decode are skipped whole: one bad call in the step that
    # holds all of a turn's calls leaves the turn without calls.
    r = rng("arguments_not_json")
    i = r.choice(full)
    k = r.randrange(len(turns[i]))
    bad = [wire(c, json.dumps(c[1])[:-1]) if n == k else wire(c) for n, c in enumerate(turns[i])]
    out.append(("arguments_not_json", replace(i, [bad, DONE])))
    r = rng("arguments_json_array")
    i = r.choice(full)
    k = r.randrange(len(turns[i]))
    bad = [wire(c, json.dumps(list(c[1].values()))) if n == k else wire(c)
           for n, c in enumerate(turns[i])]
    out.append(("arguments_json_array", replace(i, [bad, DONE])))
    # One call per step, and one call's arguments are "" (not JSON either): only
    # that call is lost.
    r = rng("arguments_empty_string")
    i = r.choice(full)
    k = r.randrange(len(turns[i]))
    steps = one_per_step(turns[i])
    steps[k] = [wire(turns[i][k], "")]
    out.append(("arguments_empty_string", replace(i, steps)))
    i = rng("text_instead_of_calls").choice(full)
    out.append(("text_instead_of_calls", replace(i, [ASK])))
    i = rng("empty_step_instead_of_calls").choice(full)
    out.append(("empty_step_instead_of_calls", replace(i, [[]])))
    # An undecodable step before a turn's good ones does no harm.
    r = rng("undecodable_step_added")
    i = r.choice(full)
    out.append(("undecodable_step_added",
                replace(i, [[wire(turns[i][0], "{not json")]] + gold[i])))
    # A turn that is a string: BFCL takes its characters as steps, none decodes.
    i = rng("turn_as_string").choice(full)
    out.append(("turn_as_string", replace(i, DONE)))

    # Turns whose answer is empty are not judged, but the model's calls there are
    # executed and change the state the next turns are judged on.
    if empty:
        r = copy.deepcopy(gold)
        probes = [PROBE[c] for c in classes if c in PROBE]
        for e in empty:
            r[e] = turn(probes, ASK)
        out.append(("empty_turn_read_only_call", r))
        changes = [CHANGE[c] for c in classes if c in CHANGE]
        if changes:
            out.append(("empty_turn_state_change", replace(empty[0], turn(changes[:1], ASK))))
        options = [e for e in empty if e + 1 < len(turns) and turns[e + 1]]
        if options:
            # The model guesses ahead: it makes the next turn's calls already
            # (which that turn repeats).
            e = options[0]
            out.append(("empty_turn_does_next_turn", replace(e, turn(turns[e + 1]))))
        out.append(("empty_turn_as_string", replace(empty[0], ASK)))

    # A call made twice in a row in the same step: the extra result is allowed;
    # the state is the same if the call reads only.
    options = [(i, k) for i in full for k, c in enumerate(turns[i]) if c[0] in READ_ONLY]
    if options:
        i, k = rng("duplicate_read_only_call").choice(options)
        out.append(("duplicate_read_only_call",
                    replace(i, turn(turns[i][:k + 1] + turns[i][k:]))))
    r = rng("duplicate_call")
    i = r.choice(full)
    k = r.randrange(len(turns[i]))
    out.append(("duplicate_call", replace(i, turn(turns[i][:k + 1] + turns[i][k:]))))

    # Turn counts that differ from the answer's, and a failed inference.
    out.append(("extra_turn", gold + [turn(turns[full[-1]][-1:])]))
    out.append(("one_turn_fewer", gold[:-1]))
    out.append(("result_string", "Error during inference: the connection was closed."))
    assert [v for v, _ in out] == [v for v in VARIANTS if v in dict(out)]
    return out


def sample(entries, answers, orders, every):
    """Every `every`-th entry, and each entry that makes a kind of output none of
    the entries before it in the sample makes (so that every kind is in it)."""
    if every == 1:
        return entries
    chosen, seen = [], set()
    for i, e in enumerate(entries):
        kinds = {v for v, _ in variants_of(e, answers[e["id"]], orders)}
        if i % every == 0 or kinds - seen:
            chosen.append(e)
            seen |= kinds
    return chosen


def generate(data, out, every):
    if data == "installed":
        data = installed_data()
    data = Path(data)
    out = Path(out)
    orders = parameter_orders(data)
    for category in CATEGORIES:
        qfile = find(data, category)
        entries = read_lines(qfile)
        answers = {a["id"]: a for a in read_lines(data / "possible_answer" / qfile.name)}
        chosen = sample(entries, answers, orders, every)
        if every > 1:
            write_lines(out / "data" / qfile.name, chosen)
            write_lines(out / "data" / "possible_answer" / qfile.name, [answers[e["id"]] for e in chosen])
        rows = []
        for e in chosen:
            for variant, result in variants_of(e, answers[e["id"]], orders):
                rows.append({"id": e["id"], "result": result, "variant": variant})
        write_lines(out / "outputs" / MODEL / f"{qfile.stem}_result.json", rows)
    if every > 1:
        # The checker needs no docs, but the importer does: all of them, as BFCL has them.
        shutil.copytree(data / "multi_turn_func_doc", out / "data" / "multi_turn_func_doc",
                        dirs_exist_ok=True)


# ---------------------------------------------------------------- BFCL's checker


def load_checker():
    """bfcl-eval's multi-turn checker, with its model table replaced by an empty one,
    and a handler that decodes as BFCL's OpenAI handler in function-calling mode."""
    from importlib.metadata import version

    if version("bfcl-eval") != PINNED:
        sys.exit(f"bfcl-eval {version('bfcl-eval')} is installed; the verdicts are pinned to {PINNED}")
    try:
        import mpmath  # noqa: F401  (MathAPI needs it; without it every MathAPI entry would fail)
    except ImportError:
        sys.exit("mpmath is not installed (bfcl-eval's MathAPI needs it)")

    table = types.ModuleType("bfcl_eval.constants.model_config")
    table.MODEL_CONFIG_MAPPING = {}
    sys.modules["bfcl_eval.constants.model_config"] = table
    import bfcl_eval.eval_checker.eval_runner as runner
    import bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils as executor
    from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler

    class Handler:
        """BFCL's OpenAI handler's own decode_execute, in function-calling mode (its
        constructor would open an API client). The checker uses nothing else of it."""

        is_fc_model = True

        def decode_execute(self, result, has_tool_call_tag):
            return OpenAICompletionsHandler.decode_execute(self, result, has_tool_call_tag)

    return runner, executor, Handler()


def check(data, out):
    runner, executor, handler = load_checker()
    if data == "installed":
        data = installed_data()
    data = Path(data)
    out = Path(out)
    judged = 0
    for category in CATEGORIES:
        qfile = find(data, category)
        entries = {e["id"]: e for e in read_lines(qfile)}
        answers = {a["id"]: a for a in read_lines(data / "possible_answer" / qfile.name)}
        rfile = out / "outputs" / MODEL / f"{qfile.stem}_result.json"
        if not rfile.is_file():
            continue
        started = time.perf_counter()
        rows = []
        for line in read_lines(rfile):
            # BFCL keeps the environment instances it executes on in the executor
            # module's globals, named by model and entry, and reuses them: each line
            # gets a model name of its own, and its instances are dropped afterwards,
            # so no state carries over from one line to the next.
            judged += 1
            model = f"agree{judged}"
            try:
                r = runner._evaluate_single_multi_turn_entry(
                    handler,
                    line["id"],
                    line["result"],
                    answers[line["id"]]["ground_truth"],
                    copy.deepcopy(entries[line["id"]]),  # the checker edits it
                    model,
                    category,
                )
                valid = bool(r["valid"])
                error = None if valid else r.get("error", {}).get("error_type")
            except Exception as e:  # BFCL's checker raised: the whole run would stop
                valid, error = None, f"checker raised {type(e).__name__}: {e}"
            finally:
                for key in [k for k in vars(executor) if k.startswith(model + "_")]:
                    del vars(executor)[key]
            rows.append({"id": line["id"], "variant": line["variant"], "valid": valid, "error_type": error})
        write_lines(out / "verdicts" / MODEL / f"{category}.json", rows)
        passed = sum(1 for r in rows if r["valid"])
        print(f"{category}: {len(rows)} lines, {passed} valid, {time.perf_counter() - started:.1f}s",
              file=sys.stderr)


def compare(out, discbench_dir):
    """BFCL's verdicts (OUT/verdicts/fc) beside discbench's (DISCBENCH/<category>.json):
    agreement per category, and every disagreement. Lines are matched by (id,
    variant); a line discbench has no verdict for (an entry its import excluded)
    is counted apart."""
    out = Path(out)
    rows = {}
    missing = {}
    disagreements = []
    for category in CATEGORIES:
        vfile = out / "verdicts" / MODEL / f"{category}.json"
        dfile = Path(discbench_dir) / f"{category}.json"
        if not vfile.is_file() or not dfile.is_file():
            continue
        mine = {(d["id"], d["variant"]): d for d in read_lines(dfile)}
        for b in read_lines(vfile):
            d = mine.get((b["id"], b["variant"]))
            if d is None:
                missing[category] = missing.get(category, 0) + 1
                continue
            r = rows.setdefault(category, [0, 0])
            r[0] += 1
            if d["valid"] == b["valid"]:
                r[1] += 1
            else:
                theirs = d.get("error_type") or d.get("reason")
                disagreements.append((category, b["id"], b["variant"], b["valid"], b["error_type"],
                                      d["valid"], theirs))
    total = [0, 0]
    print("| category | outputs | same verdict | agreement | not judged by discbench |")
    print("|---|---|---|---|---|")
    for category in CATEGORIES:
        if category in rows or category in missing:
            n, same = rows.get(category, [0, 0])
            total[0] += n
            total[1] += same
            print(f"| {category} | {n:,} | {same:,} | {100 * same / max(n, 1):.2f}% | {missing.get(category, 0):,} |")
    print(f"| all | {total[0]:,} | {total[1]:,} | {100 * total[1] / max(total[0], 1):.2f}% | "
          f"{sum(missing.values()):,} |")
    print(f"\n{len(disagreements)} disagreement(s): category | id | variant | BFCL valid | "
          f"BFCL error_type | discbench valid | discbench's reason")
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
