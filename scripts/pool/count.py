#!/usr/bin/env python3
"""Count the distinct MCP tools of the committed captures and of the distractor pool.

Two tools are the same when their name, description and inputSchema are all equal
(compared as JSON values: the order of an object's keys does not matter). The
captures read are fixtures/catalogs/*.tools.json (plain JSON) and
fixtures/pool/*.tools.json.gz (gzip-compressed JSON), both as written by
`discbench import mcp`.

    python3 scripts/pool/count.py            # totals
    python3 scripts/pool/count.py --files    # and one line per pool file

Standard library only. Run from anywhere: paths are relative to the repository.
"""
import argparse
import gzip
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CATALOGS = REPO / "fixtures" / "catalogs"
POOL = REPO / "fixtures" / "pool"


def tool_key(tool):
    """The dedupe key of one tool: its name, description and inputSchema."""
    return json.dumps(
        [tool.get("name"), tool.get("description"), tool.get("inputSchema")],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )


def load_capture(path):
    """The tools of one capture file (.tools.json or .tools.json.gz)."""
    path = Path(path)
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    doc = json.loads(data)
    tools = doc.get("tools") or []
    return [t for t in tools if isinstance(t, dict)]


def catalog_files():
    return sorted(CATALOGS.glob("*.tools.json"))


def pool_files(pool=None):
    return sorted(Path(pool or POOL).glob("*.tools.json.gz"))


def stem(path):
    name = Path(path).name
    for suffix in (".tools.json.gz", ".tools.json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def totals(pool=None):
    """Every number the pool's README states, as a dict."""
    pool = Path(pool or POOL)
    cat_keys, cat_listed = set(), 0
    cats = catalog_files()
    for f in cats:
        tools = load_capture(f)
        cat_listed += len(tools)
        cat_keys.update(tool_key(t) for t in tools)
    pool_keys, pool_listed, per_file = set(), 0, []
    union = set(cat_keys)
    pools = pool_files(pool)
    for f in pools:
        tools = load_capture(f)
        keys = {tool_key(t) for t in tools}
        pool_listed += len(tools)
        pool_keys |= keys
        per_file.append((stem(f), len(tools), len(keys - cat_keys)))
        union |= keys
    return {
        "catalog_files": len(cats),
        "catalog_tools_listed": cat_listed,
        "catalog_distinct": len(cat_keys),
        "pool_files": len(pools),
        "pool_tools_listed": pool_listed,
        "pool_distinct": len(pool_keys),
        "pool_distinct_not_in_catalogs": len(pool_keys - cat_keys),
        "union_distinct": len(union),
        "pool_bytes": sum(p.stat().st_size for p in pool.iterdir() if p.is_file()) if pool.is_dir() else 0,
        "per_file": per_file,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", action="store_true", help="also print one line per pool file")
    ap.add_argument("--json", action="store_true", help="print the totals as JSON")
    args = ap.parse_args()
    t = totals()
    if args.json:
        json.dump(t, sys.stdout, indent=1)
        print()
        return
    if args.files:
        print("pool file\ttools listed\tdistinct tools not in fixtures/catalogs")
        for name, listed, new in t["per_file"]:
            print(f"{name}\t{listed}\t{new}")
        print()
    print(f"fixtures/catalogs: {t['catalog_files']} captures, {t['catalog_tools_listed']} tools listed, "
          f"{t['catalog_distinct']} distinct")
    print(f"fixtures/pool: {t['pool_files']} captures, {t['pool_tools_listed']} tools listed, "
          f"{t['pool_distinct']} distinct ({t['pool_distinct_not_in_catalogs']} not in fixtures/catalogs), "
          f"{t['pool_bytes']} bytes on disk")
    print(f"together: {t['union_distinct']} distinct tools")


if __name__ == "__main__":
    main()
