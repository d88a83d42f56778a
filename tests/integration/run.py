#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Integration tests: root, this kernel, real processes.

Every tests/integration/test_*.py module is imported and each of its
functions named test_* is called with an eg.Ctx, in definition order. A test
fails by raising (AssertionError or anything else), is skipped by calling
ctx.skip(reason). Output: one line a test (PASS/FAIL/SKIP), then the totals.
"""
import importlib.util
import inspect
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import eg  # noqa: E402


def main():
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
            full = f"{fn[:-3]}.{name}"
            if only and not any(o in full for o in only):
                continue
            if any(k in full for k in skip):
                continue
            t0 = time.monotonic()
            outcome, detail = "PASS", []
            try:
                f(ctx)
            except eg.Skip as s:
                outcome, detail = "SKIP", [str(s)]
            except Exception as e:
                outcome = "FAIL"
                detail = [f"{type(e).__name__}: {e}"] + traceback.format_exc().splitlines()[-8:]
            finally:
                ctx.cleanup()
            # every record the test's daemons wrote must be what docs/events.schema.json says
            if ctx.schema_failures and outcome != "FAIL":
                outcome = "FAIL"
                detail = ["records the schema does not describe (docs/events.schema.json):"] + ctx.schema_failures[:5]
            ctx.schema_failures = []
            if outcome == "SKIP":
                print(f"SKIP {full}: {detail[0]}")
                skipped += 1
            elif outcome == "FAIL":
                print(f"FAIL {full}: {detail[0]}")
                for line in detail[1:]:
                    print("    " + line)
                failed += 1
            else:
                print(f"PASS {full} ({time.monotonic() - t0:.1f}s)")
                passed += 1
            sys.stdout.flush()
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
