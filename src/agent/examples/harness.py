# Runs a task's examples against the code in the repository; started by handoff inside the
# same sandbox as the check, as `python3 -I -c <this> ROOT MODULE EXAMPLES_JSON PER_EXAMPLE_S`.
# One line per example on stdout, each prefixed with the marker, so whatever the code under
# test prints cannot be taken for a result.
import contextlib, importlib, io, json, math, os, signal, sys

MARK = "@@handoff-example@@ "
root, module_name, examples, per = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, root)
# Compile from the source as it is now: a bytecode file in the tree (written by the check,
# or by an earlier run) is trusted by Python on its recorded mtime and size, so an edit of
# the same size within the same second would run the code before it. Nothing is written.
sys.dont_write_bytecode = True
sys.pycache_prefix = os.path.join(os.sep, "nonexistent", "handoff-no-pycache-%d" % os.getpid())
out = sys.stdout


def emit(record):
    out.write(MARK + json.dumps(record) + "\n")
    out.flush()


def on_alarm(signum, frame):
    raise TimeoutError(f"no result within {per} s")


def short(value):
    try:
        text = repr(value)
    except BaseException as e:  # a __repr__ that raises
        text = f"<unprintable {type(value).__name__}: {type(e).__name__}>"
    return text if len(text) <= 200 else text[:200] + "..."


def same(got, want):
    if isinstance(got, bool) or isinstance(want, bool):
        return got == want and type(got) is type(want)
    if isinstance(got, (int, float)) and isinstance(want, (int, float)):
        if isinstance(got, float) or isinstance(want, float):
            return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9) or got == want
        return got == want
    if isinstance(got, (list, tuple)) and isinstance(want, (list, tuple)):
        return type(got) is type(want) and len(got) == len(want) and all(same(a, b) for a, b in zip(got, want))
    return bool(got == want)


signal.signal(signal.SIGALRM, on_alarm)
try:
    with contextlib.redirect_stdout(io.StringIO()):
        signal.alarm(per * 2)
        namespace = dict(vars(importlib.import_module(module_name)))
        signal.alarm(0)
except BaseException as e:
    signal.alarm(0)
    emit({"import_error": f"{type(e).__name__}: {e}"[:300]})
    sys.exit(0)

for i, example in enumerate(examples):
    record = {"i": i}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            signal.alarm(per)
            got = eval(example["call"], namespace)
            record["got"] = short(got)
            text = example["expected"].strip()
            try:
                want = eval(text, dict(namespace))
                record["passed"] = same(got, want) or short(got) == text
            except Exception:
                # doctest's rule: the printed value as written.
                record["passed"] = short(got) == text or str(got) == text
            signal.alarm(0)
    except BaseException as e:
        signal.alarm(0)
        record["passed"] = False
        record["error"] = f"{type(e).__name__}: {e}"[:300]
    emit(record)
