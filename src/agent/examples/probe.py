# Runs several candidate versions of one module on the same inputs, so handoff can group
# them by what they do; started inside the check's sandbox as
# `python3 -I -c <common + this> ROOT MODULE PATH SOURCES_JSON EXAMPLES_JSON PER PROBE_S MAX_PROBES`.
# The inputs are the examples' calls, then calls made from them by changing one literal
# argument at a time (the examples' inputs alone seldom tell programs apart). Nothing is
# written: each candidate's source is executed as the module from memory.
import ast

root, module_name, path = sys.argv[1], sys.argv[2], sys.argv[3]
sources, examples = json.loads(sys.argv[4]), json.loads(sys.argv[5])
per, probe_s, max_probes = int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
sys.path.insert(0, root)


def variants(value):
    """Small changes of one literal: nearby numbers, shorter or reordered sequences."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1, 0, -value]
    if isinstance(value, float):
        return [value + 0.5, -value, 0.0]
    if isinstance(value, str):
        return ["", value[::-1], value + value[:1], value.upper()]
    if isinstance(value, (list, tuple)):
        kind = type(value)
        return [kind(), kind(value[:-1]), kind(value[::-1]), kind(list(value) + list(value[:1]))]
    return []


def derived(calls):
    """Calls made from `calls` by changing one argument, round-robin over the calls so
    every example contributes; duplicates and the originals left out."""
    seen, per_call = set(calls), []
    for text in calls:
        made = []
        try:
            node = ast.parse(text, mode="eval").body
            if not isinstance(node, ast.Call) or node.keywords:
                raise ValueError
            name = ast.unparse(node.func)
            args = [ast.literal_eval(a) for a in node.args]
        except Exception:
            per_call.append(made)
            continue
        for i, arg in enumerate(args):
            for v in variants(arg):
                changed = args[:i] + [v] + args[i + 1:]
                made.append(name + "(" + ", ".join(repr(a) for a in changed) + ")")
        per_call.append(made)
    out = []
    for round_ in range(max((len(m) for m in per_call), default=0)):
        for made in per_call:
            if round_ < len(made) and made[round_] not in seen:
                seen.add(made[round_])
                out.append(made[round_])
    return out


calls = [e["call"] for e in examples]
probes = calls + derived(calls)[: max(0, max_probes - len(calls))]
emit({"probes": probes})

for c, source in enumerate(sources):
    record = {"c": c}
    module = types.ModuleType(module_name)
    module.__file__ = os.path.join(root, path)
    sys.modules[module_name] = module
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            signal.alarm(per * 2)
            try:
                exec(compile(source, module.__file__, "exec"), module.__dict__)
            finally:
                signal.alarm(0)
    except BaseException as e:
        record["import_error"] = f"{type(e).__name__}: {e}"[:300]
        emit(record)
        continue
    outs, passed = [], []
    for i, expression in enumerate(probes):
        try:
            got = call(expression, dict(module.__dict__), per if i < len(calls) else probe_s)
            outs.append(short(got))
            if i < len(calls):
                passed.append(holds(got, examples[i]["expected"], module.__dict__))
        except BaseException as e:
            outs.append("raises " + type(e).__name__)
            if i < len(calls):
                passed.append(False)
    record["outs"], record["passed"] = outs, passed
    emit(record)
