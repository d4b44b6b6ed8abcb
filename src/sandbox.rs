//! The embedded, bounded JavaScript sandbox code mode runs programs in (QuickJS, through
//! `rquickjs`).
//!
//! A program sees `api.<group>.<function>(args)` — each a synchronous call answered by
//! the host with a JSON value, or a thrown `Error` with the host's message —,
//! `console.log`, and the language itself: no module loader, no file system, no
//! network, no timer; `Date` is fixed at one instant and `Math.random` is a seeded
//! generator, so a program's run is the same every time. Top-level `await` works (the
//! program is then run as an async function).
//!
//! Every run is bounded ([`Limits`]): a time limit (the engine's interrupt handler
//! stops a program that runs past it, however it loops), a memory limit (the engine's
//! own allocator limit), a stack limit (unbounded recursion is a `stack overflow`), a
//! limit on API calls and one on printed output. A program that breaks one, throws,
//! or calls a function the API does not have ends with an error, the message a
//! program's author needs to fix it; the host is never crashed or hung by it.
//!
//! The engine runs on a thread of its own; the host answers its API calls on the
//! calling thread, so the host's answers may borrow anything (a database, the episode
//! state) while the engine only ever holds owned values.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rquickjs::{Context, Function, Runtime};
use serde_json::Value;

/// What a program may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall time from the start of the program.
    pub time: Duration,
    /// Bytes the engine may allocate.
    pub memory: usize,
    /// Bytes of stack the engine may use.
    pub stack: usize,
    /// API calls a program may make.
    pub calls: usize,
    /// Bytes of printed output kept (the rest is cut, and said to be).
    pub output: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            time: Duration::from_secs(2),
            memory: 32 << 20,
            stack: 512 << 10,
            calls: 50,
            output: 20_000,
        }
    }
}

/// One API call a program made.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub group: String,
    pub function: String,
    pub args: Value,
}

/// How a program ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Run {
    /// What it printed (`console.log`), line by line.
    pub printed: String,
    /// Its value (the last expression's, or what the async program returned), as JSON,
    /// when it had one.
    pub value: Option<String>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// API calls it made.
    pub calls: usize,
}

/// The functions a program's `api` object holds, by group.
pub type Api = BTreeMap<String, Vec<String>>;

/// What the engine's thread asks the host.
enum Ask {
    Call(Call, mpsc::Sender<Result<Value, String>>),
    Done(Run),
}

/// The fixed instant `Date` reports (2025-03-12 14:30:00 UTC).
const FIXED_TIME_MS: i64 = 1_741_789_800_000;

/// Runs `program` with `api`, answering each API call with `answer` on this thread.
pub fn run(
    program: &str,
    api: &Api,
    limits: Limits,
    answer: &mut dyn FnMut(&Call) -> Result<Value, String>,
) -> Run {
    let (tx, rx) = mpsc::channel::<Ask>();
    let program = program.to_string();
    let api = api.clone();
    let worker = std::thread::Builder::new()
        .name("sandbox".into())
        // Room beyond the engine's own stack limit, so that it, not the thread,
        // stops deep recursion.
        .stack_size(limits.stack * 4 + (4 << 20))
        .spawn(move || {
            let done = tx.clone();
            let run = engine(&program, &api, limits, tx);
            let _ = done.send(Ask::Done(run));
        });
    let Ok(worker) = worker else {
        return Run {
            error: Some("the sandbox could not start".into()),
            ..Run::default()
        };
    };
    let mut out = None;
    for ask in rx.iter() {
        match ask {
            Ask::Call(call, reply) => {
                let _ = reply.send(answer(&call));
            }
            Ask::Done(run) => {
                out = Some(run);
                break;
            }
        }
    }
    let _ = worker.join();
    out.unwrap_or_else(|| Run {
        error: Some("the sandbox stopped without an answer".into()),
        ..Run::default()
    })
}

/// The JavaScript that sets the sandbox up around the host functions `__host`,
/// `__print`, `__finish` and `__fail`: `api` (proxies that name what does not exist),
/// `console`, a fixed `Date`, a seeded `Math.random`.
fn prelude(api: &Api) -> String {
    let groups = serde_json::to_string(api).expect("names serialize");
    format!(
        r#"(() => {{
  const groups = {groups};
  const fixed = {FIXED_TIME_MS};
  const RealDate = Date;
  function FixedDate(...a) {{
    if (!new.target) return new RealDate(fixed).toString();
    return a.length ? new RealDate(...a) : new RealDate(fixed);
  }}
  FixedDate.prototype = RealDate.prototype;
  FixedDate.now = () => fixed;
  FixedDate.UTC = RealDate.UTC;
  FixedDate.parse = RealDate.parse;
  globalThis.Date = FixedDate;
  let seed = 42;
  Math.random = () => {{ seed = (seed * 16807) % 2147483647; return (seed - 1) / 2147483646; }};
  const show = (x) => typeof x === "string" ? x : JSON.stringify(x);
  globalThis.console = {{
    log: (...a) => __print(a.map(show).join(" ")),
    error: (...a) => __print(a.map(show).join(" ")),
    info: (...a) => __print(a.map(show).join(" ")),
    warn: (...a) => __print(a.map(show).join(" ")),
  }};
  const names = Object.keys(groups).join(", ");
  globalThis.api = new Proxy({{}}, {{
    get(_, g) {{
      if (typeof g !== "string") return undefined;
      if (!(g in groups)) throw new Error(`api.${{g}} does not exist; the API's groups are: ${{names}}`);
      return new Proxy({{}}, {{
        get(_, f) {{
          if (typeof f !== "string") return undefined;
          if (!groups[g].includes(f)) throw new Error(`api.${{g}}.${{f}} does not exist; api.${{g}} has: ${{groups[g].join(", ")}}`);
          return (args) => {{
            const r = JSON.parse(__host(g, f, JSON.stringify(args === undefined ? {{}} : args)));
            if ("err" in r) throw new Error(r.err);
            return r.ok;
          }};
        }},
      }});
    }},
  }});
}})();"#
    )
}

/// The driver: runs the program as a script (its last value kept), or, when it uses
/// top-level `await`, as an async function.
fn driver(program: &str) -> String {
    let src = serde_json::to_string(program).expect("a string serializes");
    format!(
        r#"((src) => {{
  const keep = (v) => __finish(v === undefined ? "" : JSON.stringify(v) ?? "");
  const fail = (e) => __fail(e instanceof Error ? `${{e.name}}: ${{e.message}}` : `uncaught: ${{String(e)}}`);
  try {{
    keep((0, eval)(src));
  }} catch (e) {{
    if (e instanceof SyntaxError && /\bawait\b/.test(src)) {{
      const run = new Function("return (async () => {{\n" + src + "\n}})();");
      run().then(keep, fail);
    }} else {{
      fail(e);
    }}
  }}
}})({src});"#
    )
}

/// The engine's side of a run, on its own thread.
fn engine(program: &str, api: &Api, limits: Limits, tx: mpsc::Sender<Ask>) -> Run {
    use std::cell::RefCell;
    use std::rc::Rc;

    let start = Instant::now();
    let fail = |e: String| Run {
        error: Some(e),
        ..Run::default()
    };
    let Ok(rt) = Runtime::new() else {
        return fail("the sandbox could not start".into());
    };
    rt.set_memory_limit(limits.memory);
    rt.set_max_stack_size(limits.stack);
    let deadline = start + limits.time;
    let timed_out = Rc::new(RefCell::new(false));
    {
        let timed_out = timed_out.clone();
        rt.set_interrupt_handler(Some(Box::new(move || {
            let late = Instant::now() > deadline;
            if late {
                *timed_out.borrow_mut() = true;
            }
            late
        })));
    }
    let Ok(cx) = Context::full(&rt) else {
        return fail("the sandbox could not start".into());
    };
    let printed = Rc::new(RefCell::new(String::new()));
    let cut = Rc::new(RefCell::new(false));
    let finished: Rc<RefCell<Option<Result<String, String>>>> = Rc::new(RefCell::new(None));
    let calls = Rc::new(RefCell::new(0usize));
    let outcome = cx.with(|ctx| -> Result<(), String> {
        let g = ctx.globals();
        fn put<'js>(
            g: &rquickjs::Object<'js>,
            name: &str,
            f: rquickjs::Result<Function<'js>>,
        ) -> Result<(), String> {
            f.and_then(|f| g.set(name, f))
                .map_err(|e| format!("the sandbox could not start: {e}"))
        }
        let set = |name: &str, f| put(&g, name, f);
        {
            let (tx, calls) = (tx.clone(), calls.clone());
            set(
                "__host",
                Function::new(
                    ctx.clone(),
                    move |group: String, function: String, args: String| -> String {
                        let envelope = |r: Result<Value, String>| match r {
                            Ok(v) => serde_json::json!({ "ok": v }).to_string(),
                            Err(e) => serde_json::json!({ "err": e }).to_string(),
                        };
                        let n = {
                            let mut c = calls.borrow_mut();
                            *c += 1;
                            *c
                        };
                        if n > limits.calls {
                            return envelope(Err(format!(
                                "more than {} API calls in one program; do less per program",
                                limits.calls
                            )));
                        }
                        let args: Value = serde_json::from_str(&args).unwrap_or(Value::Null);
                        let (rtx, rrx) = mpsc::channel();
                        let call = Call {
                            group,
                            function,
                            args,
                        };
                        if tx.send(Ask::Call(call, rtx)).is_err() {
                            return envelope(Err("the host is gone".into()));
                        }
                        envelope(
                            rrx.recv()
                                .unwrap_or_else(|_| Err("the host is gone".into())),
                        )
                    },
                ),
            )?;
        }
        {
            let (printed, cut) = (printed.clone(), cut.clone());
            set(
                "__print",
                Function::new(ctx.clone(), move |line: String| {
                    let mut p = printed.borrow_mut();
                    if p.len() + line.len() + 1 > limits.output {
                        *cut.borrow_mut() = true;
                        return;
                    }
                    p.push_str(&line);
                    p.push('\n');
                }),
            )?;
        }
        {
            let finished = finished.clone();
            set(
                "__finish",
                Function::new(ctx.clone(), move |v: String| {
                    *finished.borrow_mut() = Some(Ok(v));
                }),
            )?;
        }
        {
            let finished = finished.clone();
            set(
                "__fail",
                Function::new(ctx.clone(), move |e: String| {
                    *finished.borrow_mut() = Some(Err(e));
                }),
            )?;
        }
        ctx.eval::<(), _>(prelude(api))
            .map_err(|e| format!("the sandbox could not start: {e}"))?;
        let r = ctx.eval::<(), _>(driver(program));
        if r.is_err() {
            let e = ctx.catch();
            return Err(describe(&e));
        }
        Ok(())
    });
    // An async program: run its jobs until it settles (the interrupt handler bounds
    // this as it bounds the script).
    let mut outcome = outcome;
    if outcome.is_ok() {
        while rt.is_job_pending() {
            if rt.execute_pending_job().is_err() {
                outcome = Err(cx.with(|ctx| describe(&ctx.catch())));
                break;
            }
        }
    }
    let calls = *calls.borrow();
    let mut printed = std::mem::take(&mut *printed.borrow_mut());
    if *cut.borrow() {
        printed.push_str(&format!("[output cut at {} bytes]\n", limits.output));
    }
    let timed_out = *timed_out.borrow();
    let finished = finished.borrow_mut().take();
    let error = if timed_out {
        Some(format!(
            "the program ran past its time limit of {} ms and was stopped (an endless loop?)",
            limits.time.as_millis()
        ))
    } else {
        match (&outcome, &finished) {
            (Err(e), _) => Some(e.clone()),
            (Ok(()), Some(Err(e))) => Some(e.clone()),
            (Ok(()), Some(Ok(_))) => None,
            (Ok(()), None) => {
                Some("the program never finished (an awaited promise that never settles?)".into())
            }
        }
    };
    let error = error.map(|e| explain(&e, limits));
    let value = match finished {
        Some(Ok(v)) if !v.is_empty() => Some(v),
        _ => None,
    };
    Run {
        printed,
        value,
        error,
        calls,
    }
}

/// The message of an exception the engine raised.
fn describe(e: &rquickjs::Value) -> String {
    if let Some(ex) = e.as_exception() {
        let msg = ex.message().unwrap_or_default();
        let name = ex
            .get::<_, String>("name")
            .unwrap_or_else(|_| "Error".into());
        return format!("{name}: {msg}");
    }
    if let Some(s) = e.as_string().and_then(|s| s.to_string().ok()) {
        return format!("uncaught: {s}");
    }
    "the program failed".into()
}

/// The engine's terse messages, said so that the program's author can act on them.
fn explain(e: &str, limits: Limits) -> String {
    if e.contains("out of memory") {
        format!(
            "{e} (the program may allocate at most {} MiB)",
            limits.memory >> 20
        )
    } else if e.contains("stack overflow") || e.contains("call stack size") {
        format!("{e} (recursion too deep for the sandbox's stack)")
    } else {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn api() -> Api {
        let mut a = Api::new();
        a.insert("erp".into(), vec!["get_order".into(), "refund".into()]);
        a
    }

    fn go(program: &str) -> (Run, Vec<Call>) {
        let mut seen = Vec::new();
        let run = run(program, &api(), Limits::default(), &mut |c| {
            seen.push(c.clone());
            match c.function.as_str() {
                "get_order" => Ok(json!({"order_id": c.args["order_id"], "total": 84.5})),
                _ => Err("refunds need an approval id".into()),
            }
        });
        (run, seen)
    }

    #[test]
    fn calls_reach_the_host_in_order_and_values_flow_between_them() {
        let (r, calls) = go("const o = api.erp.get_order({order_id: '9921'});\n\
             console.log('total', o.total);\n\
             const again = api.erp.get_order({order_id: o.order_id});\n\
             again.total * 2");
        assert_eq!(r.error, None);
        assert_eq!(r.printed, "total 84.5\n");
        assert_eq!(r.value.as_deref(), Some("169"));
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].args, json!({"order_id": "9921"}));
    }

    #[test]
    fn host_errors_are_thrown_and_can_be_caught() {
        let (r, _) = go("try { api.erp.refund({}) } catch (e) { console.log('no:', e.message) }");
        assert_eq!(r.error, None);
        assert_eq!(r.printed, "no: refunds need an approval id\n");
        let (r, _) = go("api.erp.refund({})");
        assert_eq!(
            r.error.as_deref(),
            Some("Error: refunds need an approval id")
        );
    }

    #[test]
    fn async_programs_await_and_return() {
        let (r, calls) = go("const o = await api.erp.get_order({order_id: '1'}); return o.total;");
        assert_eq!(r.error, None, "{r:?}");
        assert_eq!(r.value.as_deref(), Some("84.5"));
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn every_way_a_program_can_go_wrong_ends_with_an_error_within_the_limits() {
        let limits = Limits {
            time: Duration::from_millis(300),
            memory: 8 << 20,
            stack: 256 << 10,
            calls: 3,
            output: 100,
        };
        // A run that hung would hang this test: each case ending with its error is the
        // proof that the limits hold (no wall-clock assertion here).
        let run_it = |p: &str| run(p, &api(), limits, &mut |_| Ok(json!({})));
        let cases = [
            ("throw new TypeError('bad input')", "TypeError: bad input"),
            ("while (true) {}", "time limit of 300 ms"),
            (
                "for (;;) { try { while (true) {} } catch (e) {} }",
                "time limit",
            ),
            (
                "function f(n) { return f(n + 1) + 1 } f(0)",
                "call stack size exceeded (recursion too deep",
            ),
            (
                "const a = []; while (true) a.push('x'.repeat(1 << 20));",
                "out of memory",
            ),
            ("'x'.repeat(1 << 26)", "out of memory"),
            (
                "for (let i = 0; i < 10; i++) api.erp.get_order({})",
                "more than 3 API calls",
            ),
            (
                "api.erp.cancel({})",
                "api.erp.cancel does not exist; api.erp has: get_order, refund",
            ),
            (
                "api.crm.find({})",
                "api.crm does not exist; the API's groups are: erp",
            ),
            ("this is not javascript", "SyntaxError"),
            ("await new Promise(() => {})", "never finished"),
        ];
        for (program, expected) in cases {
            let r = run_it(program);
            let e = r.error.clone().unwrap_or_default();
            assert!(e.contains(expected), "{program}: {e:?} (wanted {expected})");
        }
        // Output past its limit is cut and says so.
        let r = run_it("for (let i = 0; i < 100; i++) console.log('line', i)");
        assert!(
            r.printed.ends_with("[output cut at 100 bytes]\n"),
            "{}",
            r.printed
        );
        assert!(r.error.is_none());
    }

    #[test]
    fn the_world_is_fixed_and_closed() {
        let (r, _) = go("[new Date().toISOString(), Date.now(), Math.random() === Math.random(), typeof require, typeof fetch, typeof std]");
        assert_eq!(r.error, None);
        let v: Value = serde_json::from_str(r.value.as_deref().unwrap()).unwrap();
        assert_eq!(
            v,
            json!([
                "2025-03-12T14:30:00.000Z",
                1741789800000u64,
                false,
                "undefined",
                "undefined",
                "undefined"
            ])
        );
        let (again, _) = go("[Math.random(), Math.random()]");
        let (once_more, _) = go("[Math.random(), Math.random()]");
        assert_eq!(again.value, once_more.value, "seeded: the same every run");
    }
}
