# Runs a task's examples against the code in the repository; started by handoff inside the
# same sandbox as the check, as `python3 -I -c <common + this> ROOT MODULE EXAMPLES_JSON PER_EXAMPLE_S`.
# One line per example.
root, module_name, examples, per = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, root)

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
        got = call(example["call"], namespace, per)
        record["got"] = short(got)
        record["passed"] = holds(got, example["expected"], namespace)
    except BaseException as e:
        record["passed"] = False
        record["error"] = f"{type(e).__name__}: {e}"[:300]
    emit(record)
