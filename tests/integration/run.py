#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Integration tests: root, this kernel, real processes.

Every tests/integration/test_*.py module is imported and each of its
functions named test_* is called with an eg.Ctx, in definition order. A test
fails by raising (AssertionError or anything else), is skipped by calling
ctx.skip(reason). Output: one line a test (PASS/FAIL/SKIP), then the totals.

No test can hang the suite: a test that has not ended after EG_TEST_TIMEOUT
seconds (240 by default; the longest takes about 15) fails with the line it
was on, its cleanups run (each cut short after eg.CLEANUP_S), and the suite
goes on. Should the interpreter itself be stuck (the alarm cannot run), every
thread's stack is printed and the suite exits. A SIGTERM (tests/run.sh's
budget for the suite) fails the running test the same way and ends the suite
after its cleanups, with the totals.
"""
import faulthandler
import importlib.util
import inspect
import os
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import eg  # noqa: E402


TEST_S = int(os.environ.get("EG_TEST_TIMEOUT") or 240)
eg.CLEANUP_S = 60
_why = ["timed out"]
_in_test = [False]
STOPPED = "the suite was stopped (SIGTERM: its budget in tests/run.sh ran out)"


def on_alarm(signum, frame):
    raise eg.Timeout(_why[0])


def on_term(signum, frame):
    # raised once: a second SIGTERM does not cut the cleanups short (a handler, not SIG_IGN,
    # which the processes the cleanups start would inherit)
    if "SIGTERM" in _why[0]:
        return
    _why[0] = STOPPED
    if _in_test[0]:
        raise eg.Timeout(_why[0])


def where(e):
    """The frames of the tests' own files, then the innermost two: the line a stopped test was on."""
    frames = traceback.extract_tb(e.__traceback__)[1:-1]   # not main(), not the handler
    ours = [f for f in frames if f.filename.startswith(HERE)]
    keep = ours + [f for f in frames[-2:] if f not in ours]
    return "".join(traceback.format_list(keep)).rstrip().splitlines()


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_term)
    stopped = False
    # optional substrings of test names to run; --skip SUBSTR leaves those out
    args, only, skip = sys.argv[1:], [], []
    while args:
        a = args.pop(0)
        if a == "--skip" and args:
            skip.append(args.pop(0))
        else:
            only.append(a)
    ctx = eg.Ctx()
    passed = failed = skipped = 0
    for fn in sorted(os.listdir(HERE)):
        if not (fn.startswith("test_") and fn.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(fn[:-3], os.path.join(HERE, fn))
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except Exception:
            print(f"FAIL {fn}: import failed")
            traceback.print_exc(file=sys.stdout)
            failed += 1
            continue
        tests = [(n, f) for n, f in vars(mod).items()
                 if n.startswith("test_") and inspect.isfunction(f) and f.__module__ == mod.__name__]
        tests.sort(key=lambda t: t[1].__code__.co_firstlineno)
        for name, f in tests:
            if stopped or _why[0] == STOPPED:
                stopped = True
                break
            full = f"{fn[:-3]}.{name}"
            if only and not any(o in full for o in only):
                continue
            if any(k in full for k in skip):
                continue
            t0 = time.monotonic()
            outcome, detail = "PASS", []
            if _why[0] != STOPPED:
                _why[0] = f"no end after {TEST_S} s"
            # the last resort, should the alarm never run: every thread's stack, then exit
            faulthandler.dump_traceback_later(TEST_S + 10 * eg.CLEANUP_S, exit=True)
            _in_test[0] = True
            try:
                signal.alarm(TEST_S)
                f(ctx)
            except eg.Skip as s:
                outcome, detail = "SKIP", [str(s)]
            except eg.Timeout as e:
                outcome = "FAIL"
                detail = [f"{e}; where it was:"] + where(e)
            except Exception as e:
                outcome = "FAIL"
                detail = [f"{type(e).__name__}: {e}"] + traceback.format_exc().splitlines()[-8:]
            finally:
                signal.alarm(0)
                _in_test[0] = False     # a SIGTERM now ends the suite after the cleanups, not one of them
                hung = ctx.cleanup()
                faulthandler.cancel_dump_traceback_later()
            stopped = _why[0] == STOPPED
            if hung:
                why = f"cleanups that did not end within {eg.CLEANUP_S} s (or were stopped): {', '.join(hung)}"
                detail = detail + [why] if outcome == "FAIL" else [why]
                outcome = "FAIL"
            # every record the test's daemons wrote must be what docs/events.schema.json says
            if ctx.schema_failures and outcome != "FAIL":
                outcome = "FAIL"
                detail = ["records the schema does not describe (docs/events.schema.json):"] + ctx.schema_failures[:5]
            ctx.schema_failures = []
            if outcome == "SKIP":
                print(f"SKIP {full}: {detail[0]}")
                skipped += 1
            elif outcome == "FAIL":
                print(f"FAIL {full}: {detail[0]} ({time.monotonic() - t0:.1f}s)")
                for line in detail[1:]:
                    print("    " + line)
                failed += 1
            else:
                print(f"PASS {full} ({time.monotonic() - t0:.1f}s)")
                passed += 1
            sys.stdout.flush()
        if stopped or _why[0] == STOPPED:
            print(f"FAIL suite stopped: {STOPPED}")
            failed += 1
            break
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # not sys.exit: the interpreter's exit joins every thread a test left behind (one blocked in an
    # accept() its test never reached, say), and the suite would never end
    os._exit(rc)
