#!/usr/bin/env python3
"""Capture the tool listings of MCP servers published on npm and PyPI, for the distractor pool.

Two steps:

  capture   For each pinned package of packages.tsv: install the exact version into a
            scratch directory, start its stdio command through
            `discbench import mcp --name NAME --out FILE --timeout 30 -- COMMAND...`,
            and append the outcome to WORK/results.jsonl (with the capture in WORK/captures/).
  finalize  Rebuild fixtures/pool/ from WORK: one NAME.tools.json.gz per kept server
            (the bytes `import mcp` wrote, gzip level 9), MANIFEST.tsv and README.md.

    python3 scripts/pool/capture.py --jobs 2
    python3 scripts/pool/capture.py --finalize

Safety, for every package:
  * npm: `npm install --ignore-scripts --no-audit --no-fund --prefix SCRATCH PKG@VERSION`
    (no install scripts run); the server is its package's bin, run with `node` from
    SCRATCH/node_modules (nothing is fetched at run time).
  * PyPI: a fresh venv per package, `pip install --only-binary :all: PKG==VERSION` (wheels
    only, so no build script runs), with the constraint `mcp<2` unless the package needs
    mcp 2.x; the server is a console script of that venv.
  * Installs and servers get an environment of only PATH, HOME (a scratch HOME per
    server), LANG and TMPDIR (scratch), plus the obviously dummy variables a row of
    packages.tsv names (recorded in the manifest). Nothing of the caller's environment
    (credentials, keys, tokens) is passed on. Download caches are shared between
    installs (WORK/cache), and hold only what the registries served.
  * Installs and captures have timeouts; each runs in its own process group, which is
    killed when it ends. Servers run in a new network and PID namespace
    (`unshare --net --pid --fork --kill-child`): they have no network at all, and every
    process they start dies with them.
  * Everything runs at nice 19.

packages.tsv columns (tab-separated, `#` lines are comments):
  registry  npm | pypi
  package   the package's name
  version   the exact version
  command   how to start the server, relative to the install: for npm a path under
            node_modules/ (run with node unless it is a native executable), for pypi
            bin/SCRIPT; then its arguments. `@DIR@` stands for an empty scratch directory.
            Empty: capture.py picks the package's bin / console script (and records it);
            `@BIN@ ARGS...`: that, with arguments.
  licence   SPDX, as the registry states it. Empty: read from the installed package.
  name      optional: the file stem (default: derived from the package name)
  env       optional: dummy variables, NAME=VALUE separated by spaces
"""
import argparse
import concurrent.futures
import configparser
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the repository
import count  # noqa: E402  (same directory)

# OSI-approved licences (https://opensource.org/licenses), as SPDX identifiers.
OSI = {
    "0BSD", "AAL", "AFL-3.0", "AGPL-3.0", "AGPL-3.0-only", "AGPL-3.0-or-later", "APL-1.0",
    "APSL-2.0", "Apache-1.1", "Apache-2.0", "Artistic-1.0", "Artistic-2.0", "BSD-1-Clause",
    "BSD-2-Clause", "BSD-2-Clause-Patent", "BSD-3-Clause", "BSD-3-Clause-LBNL", "BSL-1.0",
    "BlueOak-1.0.0", "CAL-1.0", "CATOSL-1.1", "CDDL-1.0", "CECILL-2.1", "CNRI-Python",
    "CPAL-1.0", "CUA-OPL-1.0", "ECL-1.0", "ECL-2.0", "EFL-2.0", "EPL-1.0", "EPL-2.0",
    "EUDatagrid", "EUPL-1.1", "EUPL-1.2", "Entessa", "Fair", "Frameworx-1.0", "GPL-2.0",
    "GPL-2.0-only", "GPL-2.0-or-later", "GPL-3.0", "GPL-3.0-only", "GPL-3.0-or-later",
    "HPND", "IPA", "IPL-1.0", "ISC", "Intel", "LGPL-2.0", "LGPL-2.0-only", "LGPL-2.0-or-later",
    "LGPL-2.1", "LGPL-2.1-only", "LGPL-2.1-or-later", "LGPL-3.0", "LGPL-3.0-only",
    "LGPL-3.0-or-later", "LPL-1.02", "LPPL-1.3c", "MIT", "MIT-0", "MPL-1.0", "MPL-1.1",
    "MPL-2.0", "MPL-2.0-no-copyleft-exception", "MS-PL", "MS-RL", "MirOS", "Motosoto",
    "MulanPSL-2.0", "Multics", "NASA-1.3", "NCSA", "NGPL", "NPOSL-3.0", "NTP", "Naumen",
    "Nokia", "OCLC-2.0", "OFL-1.1", "OGTSL", "OLDAP-2.8", "OSET-PL-2.1", "OSL-1.0",
    "OSL-2.0", "OSL-2.1", "OSL-3.0", "PHP-3.0", "PHP-3.01", "PostgreSQL", "Python-2.0",
    "QPL-1.0", "RPL-1.1", "RPL-1.5", "RPSL-1.0", "RSCPL", "SISSL", "SPL-1.0", "SimPL-2.0",
    "Sleepycat", "UCL-1.0", "UPL-1.0", "Unicode-DFS-2016", "Unlicense", "VSL-1.0", "W3C",
    "Watcom-1.0", "Xnet", "ZPL-2.0", "ZPL-2.1", "Zlib", "eCos-2.0", "wxWindows",
}
# How PyPI's trove classifiers name OSI-approved licences.
CLASSIFIERS = {
    "MIT License": "MIT", "MIT No Attribution License (MIT-0)": "MIT-0",
    "Apache Software License": "Apache-2.0", "BSD License": "BSD-3-Clause",
    "ISC License (ISCL)": "ISC", "Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0",
    "GNU General Public License v3 (GPLv3)": "GPL-3.0",
    "GNU General Public License v3 or later (GPLv3+)": "GPL-3.0-or-later",
    "GNU General Public License v2 (GPLv2)": "GPL-2.0",
    "GNU Affero General Public License v3": "AGPL-3.0",
    "GNU Affero General Public License v3 or later (AGPLv3+)": "AGPL-3.0-or-later",
    "GNU Lesser General Public License v3 (LGPLv3)": "LGPL-3.0",
    "GNU Lesser General Public License v2 or later (LGPLv2+)": "LGPL-2.0-or-later",
    "The Unlicense (Unlicense)": "Unlicense", "Zero-Clause BSD (0BSD)": "0BSD",
    "Python Software Foundation License": "Python-2.0",
}
# Common spellings of SPDX ids in package metadata.
ALIASES = {
    "mit license": "MIT", "the mit license": "MIT", "mit": "MIT", "apache 2.0": "Apache-2.0",
    "apache-2": "Apache-2.0", "apache 2": "Apache-2.0", "apache license 2.0": "Apache-2.0",
    "apache license, version 2.0": "Apache-2.0", "apache license version 2.0": "Apache-2.0",
    "apache software license": "Apache-2.0", "apache2": "Apache-2.0", "bsd": "BSD-3-Clause",
    "bsd-3": "BSD-3-Clause", "bsd 3-clause": "BSD-3-Clause", "isc license": "ISC",
    "gplv3": "GPL-3.0", "gpl-3": "GPL-3.0", "agplv3": "AGPL-3.0", "mpl 2.0": "MPL-2.0",
    "unlicense": "Unlicense", "the unlicense": "Unlicense",
}
OSI_LOWER = {x.lower(): x for x in OSI}

INSTALL_TIMEOUT = 420
CAPTURE_TIMEOUT = 30
CAPTURE_HARD_TIMEOUT = 120
DATE = "2026-11-27"


def normalise_licence(text):
    """An SPDX id (or expression) for a licence string, or the string itself."""
    if text is None:
        return ""
    t = " ".join(str(text).split())
    if not t:
        return ""
    if t.lower() in OSI_LOWER:
        return OSI_LOWER[t.lower()]
    if t.lower() in ALIASES:
        return ALIASES[t.lower()]
    return t


def is_osi(expr):
    """Whether an SPDX expression is OSI-approved (all terms of an AND, some term of an OR)."""
    e = expr.strip().strip("()")
    if not e:
        return False
    if " OR " in e:
        return any(is_osi(p) for p in e.split(" OR "))
    if " AND " in e:
        return all(is_osi(p) for p in e.split(" AND "))
    e = e.strip("() ")
    if e.endswith("+"):
        e = e[:-1]
    if " WITH " in e:
        e = e.split(" WITH ")[0].strip()
    return e in OSI or e.lower() in OSI_LOWER


def stable_name(registry, package):
    """A filesystem-safe file stem for a package: npm `@scope/name` -> `scope__name`,
    npm `name` -> `name`, PyPI `name` -> `pypi__name` (PEP 503 normalised)."""
    if registry == "pypi":
        base = "pypi__" + re.sub(r"[-_.]+", "-", package).lower()
    else:
        base = package.lower()
        if base.startswith("@"):
            base = base[1:].replace("/", "__", 1)
    return re.sub(r"[^a-z0-9._-]+", "-", base).strip(".-") or "server"


def read_packages(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if cols[0] == "registry":
                continue  # header
            cols += [""] * (7 - len(cols))
            reg, pkg, ver, cmd, lic, name, env = [c.strip() for c in cols[:7]]
            if reg not in ("npm", "pypi"):
                raise SystemExit(f"{path}:{lineno}: registry must be npm or pypi, not {reg!r}")
            rows.append({
                "registry": reg, "package": pkg, "version": ver, "command": cmd,
                "licence": lic, "name": name or stable_name(reg, pkg), "env": env,
            })
    seen = {}
    for r in rows:
        if r["name"] in seen:
            raise SystemExit(f"{path}: the name {r['name']} is used twice ({seen[r['name']]} and {r['package']})")
        seen[r["name"]] = r["package"]
    return rows


def one_line(text, limit=300):
    lines = [l.strip() for l in (text or "").splitlines()
             if l.strip() and "complete log of this run" not in l and not l.strip().endswith("npm error")]
    # the line that says what went wrong, if one does (not a stack frame), then the last one
    telling = [l for l in lines if re.search(r"error|required|not set|missing|invalid|must|please|cannot|unknown|no such", l, re.I)
               and not re.match(r"at |Node\.js v", l)]
    pick = ([telling[-1]] if telling else []) + [lines[-1]] if lines else []
    s = " | ".join(dict.fromkeys(pick))
    s = re.sub(r"\x1b\[[0-9;]*m|\[[0-9;]*m", "", s)
    s = s.replace("\t", " ")
    return s[-limit:] if len(s) > limit else s


def clean_env(scratch, extra_path=(), dummies=""):
    """The whole environment of an install or a server: PATH, HOME, LANG, TMPDIR (+ dummies)."""
    home, tmp = scratch / "home", scratch / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    node_dir = os.path.dirname(shutil.which("node") or "/usr/bin/node")
    path = list(extra_path) + [node_dir, "/usr/local/bin", "/usr/bin", "/bin"]
    env = {"PATH": ":".join(dict.fromkeys(path)), "HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": str(tmp)}
    for word in dummies.split():
        k, _, v = word.partition("=")
        if k and k not in env:
            env[k] = v
    return env


def run(cmd, env, cwd, timeout):
    """Run a command in its own process group; kill the group at the end. (rc, stdout, stderr)"""
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc = "timeout"
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def pick(names, package):
    """The bin / console script to run, out of several."""
    names = list(names)
    if len(names) == 1:
        return names[0]
    base = package.split("/")[-1].lower()
    for n in names:
        if n.lower() == base:
            return n
    mcp = [n for n in names if "mcp" in n.lower()]
    if len(mcp) >= 1:
        return sorted(mcp, key=len)[0]
    return sorted(names, key=len)[0] if names else None


# Where the machine's CA bundle is: installs reach the registries through TLS that may need
# it. Paths only, never a secret; servers do not get them (they have no network anyway).
CA_VARS = ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "PIP_CERT", "REQUESTS_CA_BUNDLE")


def install_env(scratch):
    env = clean_env(scratch)
    for k in CA_VARS:
        v = os.environ.get(k, "")
        if v.startswith("/") and os.path.exists(v):
            env[k] = v
    return env


def npm_install(row, scratch, cache):
    env = install_env(scratch)
    env["npm_config_cache"] = str(cache / "npm")
    env["npm_config_fetch_retries"] = "1"
    env["npm_config_fetch_timeout"] = "60000"
    env["PUPPETEER_SKIP_DOWNLOAD"] = "1"
    env["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
    cmd = ["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--no-save",
           "--loglevel=error", "--prefix", str(scratch), f"{row['package']}@{row['version']}"]
    rc, out, err = run(cmd, env, scratch, INSTALL_TIMEOUT)
    if rc != 0:
        return f"install: npm {rc}: {one_line(err)}"
    return None


def npm_meta(row, scratch):
    pj = scratch / "node_modules" / row["package"] / "package.json"
    meta = json.loads(pj.read_text(encoding="utf-8"))
    lic = meta.get("license")
    if isinstance(lic, dict):
        lic = lic.get("type")
    if not lic and isinstance(meta.get("licenses"), list) and meta["licenses"]:
        l0 = meta["licenses"][0]
        lic = l0.get("type") if isinstance(l0, dict) else l0
    bins = meta.get("bin") or {}
    if isinstance(bins, str):
        bins = {row["package"].split("/")[-1]: bins}
    command = None
    name = pick(bins.keys(), row["package"]) if bins else None
    if name:
        rel = os.path.normpath(os.path.join("node_modules", row["package"], bins[name]))
        command = rel
    return normalise_licence(lic), command


def pypi_install(row, scratch, cache):
    venv = scratch / "venv"
    env = install_env(scratch)
    env["PIP_CACHE_DIR"] = str(cache / "pip")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    rc, out, err = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], env, scratch, 120)
    if rc != 0:
        return f"install: venv {rc}: {one_line(err)}"
    cmd = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
           "--no-input", "--only-binary", ":all:", f"{row['package']}=={row['version']}"]
    # Most servers were written against the `mcp` SDK 1.x and leave it unbounded, and `mcp` 2.x
    # renamed what they import: keep 1.x, unless the package itself needs 2.x.
    constraints = scratch / "constraints.txt"
    constraints.write_text("mcp<2\n")
    rc, out, err = run(cmd + ["--constraint", str(constraints)], env, scratch, INSTALL_TIMEOUT)
    if rc != 0 and rc != "timeout" and ("ResolutionImpossible" in err or "conflict" in err.lower()):
        rc, out, err = run(cmd, env, scratch, INSTALL_TIMEOUT)
    if rc != 0:
        return f"install: pip {rc}: {one_line(err)}"
    return None


def pypi_meta(row, scratch):
    want = re.sub(r"[-_.]+", "_", row["package"]).lower()
    dist = None
    for d in (scratch / "venv" / "lib").glob("python*/site-packages/*.dist-info"):
        n = d.name[: -len(".dist-info")].rsplit("-", 1)[0]
        if re.sub(r"[-_.]+", "_", n).lower() == want:
            dist = d
            break
    if dist is None:
        return "", None
    lic = ""
    classifiers = []
    meta_text = (dist / "METADATA").read_text(encoding="utf-8", errors="replace")
    header = meta_text.split("\n\n", 1)[0]
    fields = {}
    for line in header.splitlines():
        k, sep, v = line.partition(": ")
        if sep and not line.startswith(" "):
            fields.setdefault(k, v)
            if k == "Classifier":
                classifiers.append(v)
    lic = fields.get("License-Expression") or ""
    if not lic:
        raw = fields.get("License", "")
        if raw and len(raw) < 60 and "\n" not in raw:
            lic = normalise_licence(raw)
            if not is_osi(lic):
                lic = ""
    if not lic:
        for c in classifiers:
            if c.startswith("License :: OSI Approved :: "):
                lic = CLASSIFIERS.get(c.rsplit(" :: ", 1)[1], "")
                if lic:
                    break
    if not lic:
        lic = normalise_licence(fields.get("License", "")) or "NOASSERTION"
        lic = lic[:60]
    command = None
    ep = dist / "entry_points.txt"
    if ep.exists():
        cp = configparser.ConfigParser(interpolation=None, delimiters=("=",))
        cp.optionxform = str
        cp.read_string(ep.read_text(encoding="utf-8", errors="replace"))
        if cp.has_section("console_scripts"):
            name = pick(cp.options("console_scripts"), row["package"])
            if name:
                command = f"bin/{name}"
    return normalise_licence(lic), command


def server_argv(row, scratch, command):
    words = command.replace("@DIR@", str(scratch / "dir")).split()
    exe = (scratch if row["registry"] == "npm" else scratch / "venv") / words[0]
    if row["registry"] == "npm":
        head = exe.read_bytes()[:128] if exe.exists() else b""
        if head.startswith(b"\x7fELF") or (head.startswith(b"#!") and b"node" not in head.split(b"\n")[0]):
            return [str(exe)] + words[1:]
        return [shutil.which("node") or "node", str(exe)] + words[1:]
    return [str(exe)] + words[1:]


def capture_one(row, args, isolate):
    name = row["name"]
    res = {"registry": row["registry"], "package": row["package"], "version": row["version"],
           "name": name, "licence": row["licence"], "command": row["command"], "env": row["env"],
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    t0 = time.time()
    if row["licence"] and not is_osi(row["licence"]):
        res.update(status="excluded", why="licence")
        return res
    scratch = Path(tempfile.mkdtemp(prefix=name[:40] + ".", dir=args.work / "scratch"))
    try:
        (scratch / "dir").mkdir()
        if row["registry"] == "npm":
            err = npm_install(row, scratch, args.work / "cache")
        else:
            err = pypi_install(row, scratch, args.work / "cache")
        res["install_seconds"] = round(time.time() - t0, 1)
        if err:
            res.update(status="failed", why=err)
            return res
        try:
            lic, command = (npm_meta if row["registry"] == "npm" else pypi_meta)(row, scratch)
        except Exception as e:  # a package.json or METADATA that does not parse
            res.update(status="failed", why=f"metadata: {e}")
            return res
        if not row["licence"]:
            res["licence"] = lic or "NOASSERTION"
        if not is_osi(res["licence"]):
            res.update(status="excluded", why="licence")
            return res
        if not row["command"] or row["command"].split()[0] == "@BIN@":
            if not command:
                res.update(status="failed", why="no bin / console script to start")
                return res
            res["command"] = " ".join([command] + row["command"].split()[1:])
        argv = server_argv(row, scratch, res["command"])
        extra = [str(scratch / "venv" / "bin")] if row["registry"] == "pypi" else []
        env = clean_env(scratch, extra, row["env"])
        out = args.work / "captures" / f"{name}.tools.json"
        out.unlink(missing_ok=True)
        cmd = [args.discbench, "import", "mcp", "--name", name, "--out", str(out),
               "--timeout", str(CAPTURE_TIMEOUT), "--"] + argv
        if isolate:
            cmd = ["unshare", "--net", "--pid", "--fork", "--kill-child", "--"] + cmd
        t1 = time.time()
        rc, so, se = run(cmd, env, scratch / "dir", CAPTURE_HARD_TIMEOUT)
        res["capture_seconds"] = round(time.time() - t1, 1)
        if rc != 0 or not out.exists():
            res.update(status="failed", why=f"import mcp {rc}: {one_line(se)}", stderr_tail=se[-1500:])
            out.unlink(missing_ok=True)
            return res
        tools = count.load_capture(out)
        res.update(status="ok", tools=len(tools), why="")
        return res
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        res["seconds"] = round(time.time() - t0, 1)
        # no path of this machine in what is recorded
        for k in ("why", "command", "stderr_tail"):
            if res.get(k):
                res[k] = res[k].replace(str(scratch), "SCRATCH").replace(str(args.work), "WORK")


def load_results(work):
    results = {}
    p = work / "results.jsonl"
    if p.exists():
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                results[r["name"]] = r
    return results


def do_capture(args, rows):
    for d in ("scratch", "captures", "cache"):
        (args.work / d).mkdir(parents=True, exist_ok=True)
    isolate = not args.no_isolation
    if isolate:
        rc = subprocess.run(["unshare", "--net", "--pid", "--fork", "--kill-child", "--", "true"],
                            capture_output=True).returncode
        if rc != 0:
            raise SystemExit("unshare --net --pid does not work here: run as root, or pass --no-isolation")
    done = load_results(args.work)
    todo = [r for r in rows if args.redo or r["name"] not in done]
    if args.only:
        todo = [r for r in todo if r["name"] in args.only or r["package"] in args.only]
    if args.limit:
        todo = todo[: args.limit]
    lock = threading.Lock()
    print(f"{len(todo)} packages to capture, {args.jobs} at a time", flush=True)

    def job(row):
        if (args.work / "STOP").exists():  # a graceful stop: touch WORK/STOP
            return
        try:
            res = capture_one(row, args, isolate)
        except Exception as e:  # anything unexpected is a failure of that package alone
            res = {"registry": row["registry"], "package": row["package"], "version": row["version"],
                   "name": row["name"], "licence": row["licence"], "command": row["command"],
                   "env": row["env"], "status": "failed", "why": f"capture.py: {type(e).__name__}: {e}"}
        with lock:
            with open(args.work / "results.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(res) + "\n")
            print(f"{res['status']:8} {res.get('tools', ''):>4} {res.get('seconds', 0):>6}s "
                  f"{row['registry']} {row['package']}@{row['version']} {res.get('why', '')[:150]}", flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        list(ex.map(job, todo))


def do_finalize(args, rows):
    """Rebuild fixtures/pool/ from WORK, in the order of packages.tsv."""
    results = load_results(args.work)
    pool = args.out
    pool.mkdir(parents=True, exist_ok=True)
    for old in pool.glob("*.tools.json.gz"):
        old.unlink()
    seen = set()
    for f in count.catalog_files():
        seen.update(count.tool_key(t) for t in count.load_capture(f))
    manifest = []
    for row in rows:
        r = results.get(row["name"])
        if r is None:
            continue  # not tried
        status, why = r["status"], r.get("why", "")
        if status == "failed" and r.get("stderr_tail") and why.startswith("import mcp"):
            why = why.split(":", 1)[0] + ": " + one_line(r["stderr_tail"])
        listed, added = r.get("tools", ""), ""
        licence = r.get("licence") or row["licence"]
        if status == "ok":
            cap = args.work / "captures" / f"{row['name']}.tools.json"
            data = cap.read_bytes()
            # A server may name files of its own install (e.g. icons as file:// URLs): the
            # scratch directory is this machine's, so it is written as SCRATCH instead.
            data, rewritten = re.subn(re.escape(str(args.work / "scratch")).encode() + rb"/[^/\"]+", b"SCRATCH", data)
            if rewritten:
                why = f"note: {rewritten} path(s) into its install written as SCRATCH"
            tools = count.load_capture(cap)
            keys = {count.tool_key(t) for t in tools}
            new = keys - seen
            listed, added = len(tools), len(new)
            if not tools:
                status, why, added = "excluded", "listed no tools", 0
            elif not new:
                status, why = "excluded", "duplicate: every tool is already in the pool"
            else:
                seen |= new
                (pool / f"{row['name']}.tools.json.gz").write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
        elif status == "excluded":
            listed, added = "", ""
        dummy = r.get("env") or ""
        manifest.append([row["registry"], row["package"], row["version"], licence, status,
                         str(listed), str(added), row["name"] if status == "ok" else "",
                         r.get("command", ""), dummy, why.replace("\t", " ").replace("\n", " ")])
    with open(pool / "MANIFEST.tsv", "w", encoding="utf-8") as f:
        f.write("registry\tpackage\tversion\tlicence\tstatus\ttools_listed\tdistinct_added\tfile_stem"
                "\tcommand\tdummy_env\twhy\n")
        for m in manifest:
            f.write("\t".join(m) + "\n")
    write_readme(args, manifest, results)


def write_readme(args, manifest, results):
    t = count.totals(args.out)
    tried = len(manifest)
    by = {s: sum(1 for m in manifest if m[4] == s) for s in ("ok", "failed", "excluded")}
    lic_ex = sum(1 for m in manifest if m[4] == "excluded" and m[10] == "licence")
    dup_ex = sum(1 for m in manifest if m[4] == "excluded" and m[10].startswith("duplicate"))
    none_ex = sum(1 for m in manifest if m[4] == "excluded" and m[10] == "listed no tools")
    listed_ok = sum(int(m[5]) for m in manifest if m[5].isdigit())
    dummies = sum(1 for m in manifest if m[4] == "ok" and m[9])
    npm_n = sum(1 for m in manifest if m[0] == "npm")
    pypi_n = tried - npm_n
    secs = sum(r.get("seconds", 0) for r in results.values())
    import calendar
    spans = [(calendar.timegm(time.strptime(r["started"], "%Y-%m-%dT%H:%M:%SZ")), r.get("seconds", 0))
             for r in results.values() if r.get("started")]
    wall = (max(a + b for a, b in spans) - min(a for a, _ in spans)) / 3600 if spans else 0
    text = README.format(
        date=DATE, tried=tried, npm=npm_n, pypi=pypi_n, ok=by["ok"], failed=by["failed"],
        excluded=by["excluded"], lic_ex=lic_ex, dup_ex=dup_ex, none_ex=none_ex, listed=listed_ok,
        dummies=dummies, files=t["pool_files"], pool_listed=t["pool_tools_listed"],
        pool_distinct=t["pool_distinct"], pool_new=t["pool_distinct_not_in_catalogs"],
        cat_files=t["catalog_files"], cat_listed=t["catalog_tools_listed"],
        cat_distinct=t["catalog_distinct"], union=t["union_distinct"],
        mb=f"{t['pool_bytes'] / 1e6:.1f}", hours=f"{secs / 3600:.1f}", wall=f"{wall:.1f}",
    )
    (args.out / "README.md").write_text(text, encoding="utf-8")
    # the README is part of the size: recount
    t2 = count.totals(args.out)
    if t2["pool_bytes"] > 15_000_000:
        print(f"warning: fixtures/pool is {t2['pool_bytes']} bytes, over 15 MB", file=sys.stderr)
    print(f"pool: {t['pool_files']} files, {t['pool_distinct']} distinct tools; with fixtures/catalogs "
          f"{t['union_distinct']}; {t2['pool_bytes']} bytes")


README = """# Distractor pool: real MCP tools from servers published on npm and PyPI

Each `NAME.tools.json.gz` here is one capture by `discbench import mcp` of a real MCP
server installed from the npm registry or PyPI at a pinned version: the bytes the import
wrote (the same format as `fixtures/catalogs/*.tools.json`, see its README), compressed
with gzip at level 9. The one change: a path into the server's scratch install (one server,
`ebay-mcp`, lists its icons as `file://` URLs) is written as `SCRATCH` (its MANIFEST row
says so). The pool gives catalog-size sweeps distractors by the thousand; it is
committed data, made once by hand on {date}, and nothing of it runs in CI.

`MANIFEST.tsv` has one row per package tried: registry, package, version, licence (SPDX,
as the package states it), status (`ok`, `failed`, `excluded`), tools listed, distinct
tools the capture added to the pool, the file stem (for `ok` rows: `FILE_STEM.tools.json.gz`),
the command it was started with (relative to its install), the dummy environment variables
it was given (if any), and why it failed or was excluded (for failures, the end of the
install's or of `import mcp`'s standard error, on one line).

## Totals ({date})

| | |
|---|---|
| packages tried | {tried} ({npm} npm, {pypi} PyPI) |
| ok (a capture kept here) | {ok} |
| failed (would not install, start or list) | {failed} |
| excluded | {excluded}: {lic_ex} for their licence, {dup_ex} whose tools were all already in the pool, {none_ex} that listed no tools |
| tools listed by the servers that started | {listed} |
| captures in the pool | {files}, {pool_listed} tools listed, {pool_distinct} distinct |
| distinct pool tools not in `fixtures/catalogs` | {pool_new} |
| `fixtures/catalogs` (the {cat_files} committed captures) | {cat_listed} tools listed, {cat_distinct} distinct |
| **distinct tools, pool and `fixtures/catalogs` together** | **{union}** |
| size of `fixtures/pool/` | {mb} MB |

These numbers are the output of `python3 scripts/pool/count.py` (and of MANIFEST.tsv for
the counts of packages). Installing and capturing took {hours} hours of worker time, in
{wall} hours of wall clock with two workers at a time (the last try of each package
counted).

**Dedupe rule.** Two tools are the same when their `name`, `description` and
`inputSchema` are all equal (as JSON values: key order does not matter). The
`distinct_added` column counts, in manifest order and after the committed captures of
`fixtures/catalogs`, the tools of each capture not seen before; a server whose tools
were all seen before is excluded and its capture not kept. A loader that draws
distractors from the pool should skip copies by the same rule (copies remain *within*
a file and between a kept file and `fixtures/catalogs`, since files are kept whole).
Tool names are not unique across the pool (many servers have a `search` or `get_user`).

## How it was made

The pinned list is `scripts/pool/packages.tsv`; `scripts/pool/capture.py` installs and
captures them, and rebuilds this directory:

    python3 scripts/pool/capture.py --jobs 2       # install and capture (resumable)
    python3 scripts/pool/capture.py --finalize     # rebuild fixtures/pool/ from the work dir
    python3 scripts/pool/count.py

(`--discbench PATH` or the environment variable `DISCBENCH` names the binary, default
`discbench` on PATH; `--work DIR` the work directory, default `discbench-pool-work` in the
system's temporary directory; `touch WORK/STOP` stops a run between packages.) Each server was started with
`discbench import mcp --name FILE_STEM --out FILE --timeout 30 -- COMMAND...` (asking
for discbench's default protocol version), so `serverInfo.name` in each file is the file
stem, not the name the server gives itself. Packages already captured in
`fixtures/catalogs` were left out, except for the modes noted below.
The candidates were packages of npm and PyPI whose names or summaries mention MCP (from
lists of the registries' packages), large servers first (those whose summaries announce
many tools, API wrappers, cloud providers), then by downloads; `capture.py` picks a
package's bin (npm) or console script (PyPI, from its wheel's `entry_points.txt`) when
`packages.tsv` names none. A few servers were started with the arguments that make them
list all their tools (their `command` in MANIFEST.tsv): `@larksuiteoapi/lark-mcp` with
every tool name it ships, `@twilio-alpha/mcp` with every service it ships
(`twilio-alpha__mcp--all-services`), `@softeria/ms-365-mcp-server --org-mode`
(`softeria__ms-365-mcp-server--org-mode`), `@postman/postman-mcp-server --full`. The
Twilio and Microsoft 365 servers also have a capture in `fixtures/catalogs` (in their
default modes), so some tools of these two files are copies of committed ones.

## Safety measures

- npm packages were installed with `npm install --ignore-scripts --no-audit --no-fund
  --prefix SCRATCH PKG@VERSION` (no install script ran) and started with `node` from
  `SCRATCH/node_modules` (nothing fetched at run time).
- PyPI packages were installed into a fresh venv each with `pip install --only-binary :all:
  PKG==VERSION` (wheels only: no build script ran), and started from the venv's console
  script. Most of them leave the `mcp` SDK unbounded and were written against 1.x, which
  2.x breaks (it renamed `FastMCP`), so pip was given the constraint `mcp<2`, dropped
  only for packages that need 2.x.
- Installs and servers ran with only `PATH`, `HOME` (a scratch HOME per server), `LANG`
  and `TMPDIR` (scratch) in their environment, plus the variables of `dummy_env` ({dummies}
  of the kept captures): obviously dummy credentials (`DUMMY`, zero ids, `127.0.0.1` or
  `dummy` URLs; a few servers take theirs as arguments, in `command`), given only where a
  server names them and then lists its tools offline,
  and a few settings (`AWS_REGION=us-east-1`, GitLab's `USE_*` switches). No credential of
  the machine was passed on. Installs also got the locations of the machine's CA
  certificate bundle (`NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`, ...: paths, not secrets),
  which reaching the registries needed; servers did not.
- Installs had a time limit of {install} s, captures one of {capture} s (and a hard limit of
  {hard} s); each ran in its own process group, killed at the end.
- Servers ran in a new network and PID namespace (`unshare --net --pid --fork
  --kill-child`): no network at all (only the installs reached the registries), and every
  process a server started was killed with it. Everything ran at `nice -n 19`.
- Only packages under an OSI-approved licence are kept; others are in the manifest as
  `excluded` with `licence`, and were not started.

## Licences

Every kept capture comes from a package that declares an OSI-approved licence (the
`licence` column). A capture holds the tool names, descriptions and schemas a server
publishes to every client that connects; they are kept unchanged, for measurement.
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packages", type=Path, default=HERE / "packages.tsv")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "discbench-pool-work")
    ap.add_argument("--out", type=Path, default=REPO / "fixtures" / "pool")
    ap.add_argument("--discbench", default=os.environ.get("DISCBENCH", "discbench"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="capture at most N packages")
    ap.add_argument("--only", nargs="*", help="only these names or packages")
    ap.add_argument("--redo", action="store_true", help="capture again packages already in WORK/results.jsonl")
    ap.add_argument("--keep", action="store_true", help="keep the scratch installs")
    ap.add_argument("--no-isolation", action="store_true", help="do not run servers in a new network/PID namespace")
    ap.add_argument("--finalize", action="store_true", help="rebuild fixtures/pool/ from WORK")
    args = ap.parse_args()
    args.work = args.work.resolve()
    args.out = args.out.resolve()
    os.nice(19)
    rows = read_packages(args.packages)
    if args.finalize:
        do_finalize(args, rows)
        return
    found = shutil.which(args.discbench)
    if not found:
        raise SystemExit(f"no discbench binary: {args.discbench} (give --discbench or DISCBENCH)")
    args.discbench = os.path.abspath(found)
    do_capture(args, rows)


README = README.replace("{install}", str(INSTALL_TIMEOUT)).replace("{capture}", str(CAPTURE_TIMEOUT)).replace(
    "{hard}", str(CAPTURE_HARD_TIMEOUT))

if __name__ == "__main__":
    main()
