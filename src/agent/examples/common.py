# What the examples harness and the candidates probe share; handoff runs each as this text
# followed by its own part, with `python3 -I -c`. Result lines go to the real stdout, each
# prefixed with the marker, so whatever the code under test prints cannot be taken for one.
import contextlib, importlib, io, json, math, os, signal, sys, types

MARK = "@@handoff-example@@ "
out = sys.stdout
# Compile from the source as it is now: a bytecode file in the tree (written by the check,
# or by an earlier run) is trusted by Python on its recorded mtime and size, so an edit of
# the same size within the same second would run the code before it. Nothing is written.
sys.dont_write_bytecode = True
sys.pycache_prefix = os.path.join(os.sep, "nonexistent", "handoff-no-pycache-%d" % os.getpid())


def emit(record):
    out.write(MARK + json.dumps(record) + "\n")
    out.flush()


def on_alarm(signum, frame):
    raise TimeoutError("no result in time")


signal.signal(signal.SIGALRM, on_alarm)


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


def holds(got, expected, namespace):
    """Whether `got` is the example's expected value (a Python expression, or as printed)."""
    text = expected.strip()
    try:
        want = eval(text, dict(namespace))
        return same(got, want) or short(got) == text
    except Exception:
        # doctest's rule: the printed value as written.
        return short(got) == text or str(got) == text


def call(expression, namespace, seconds):
    """The value of `expression` in `namespace` within `seconds`; whatever it prints is
    swallowed. Raises what the code raised."""
    with contextlib.redirect_stdout(io.StringIO()):
        signal.alarm(seconds)
        try:
            return eval(expression, namespace)
        finally:
            signal.alarm(0)
