#!/usr/bin/env python3
"""Golden values for src/metrics, computed independently of the Rust code.

Dev-only, not run by CI. Writes tests/golden/metrics.json, which the Rust test
`tests/metrics/golden.rs` reads and matches to 1e-9. Where scikit-learn has a function
(AUROC, Brier, precision/recall/F1) it is used; ECE, MCE, AURC and the RouteLLM-style
APGR/CPT have none, so they are written here from their definitions with numpy.

Usage: pip install scikit-learn && python3 tools/golden_metrics.py
"""

import json
import pathlib

import numpy as np
from sklearn.metrics import brier_score_loss, precision_recall_fscore_support, roc_auc_score

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "golden" / "metrics.json"


# ---------------------------------------------------------------- forecast datasets

def forecast_datasets():
    rng = np.random.default_rng(20260707)
    sets = {}
    sets["hand_with_ties"] = (
        [0.9, 0.9, 0.8, 0.75, 0.5, 0.5, 0.5, 0.3, 0.2, 0.1, 1.0, 0.0],
        [1, 0, 1, 1, 1, 0, 0, 1, 0, 0, 1, 0],
    )
    # An overconfident judge: outcomes drawn at a lower rate than forecast.
    p = rng.beta(2.0, 2.0, size=200)
    y = rng.random(200) < p ** 1.6
    sets["overconfident_200"] = (p.tolist(), y.astype(int).tolist())
    # A coarse judge: forecasts rounded to tenths, so ties everywhere.
    p = np.round(rng.random(300), 1)
    y = rng.random(300) < p
    sets["rounded_ties_300"] = (p.tolist(), y.astype(int).tolist())
    sets["fewer_than_bins"] = ([0.15, 0.55, 0.62, 0.91, 0.33], [0, 1, 0, 1, 1])
    sets["one_class"] = ([0.2, 0.6, 0.6, 0.95], [1, 1, 1, 1])
    return sets


def bins_equal_width(p, y, n):
    idx = np.minimum(np.floor(np.clip(p, 0.0, 1.0) * n).astype(int), n - 1)
    out = []
    for b in range(n):
        mask = idx == b
        if mask.any():
            out.append((mask.sum(), p[mask].mean(), y[mask].mean()))
    return out


def bins_equal_mass(p, y, n):
    order = np.argsort(p, kind="stable")
    total = len(p)
    out = []
    for b in range(n):
        lo, hi = (b * total) // n, ((b + 1) * total) // n
        sel = order[lo:hi]
        if len(sel):
            out.append((len(sel), p[sel].mean(), y[sel].mean()))
    return out


def ece_mce(bins, total):
    gaps = [abs(acc - conf) for (_, conf, acc) in bins]
    ece = sum(cnt / total * g for (cnt, _, _), g in zip(bins, gaps))
    return ece, max(gaps)


def aurc_expected_over_ties(p, y):
    """Mean risk over coverages, accepting by descending p, ties broken at random (expectation)."""
    n = len(p)
    fail = 1.0 - y
    values = np.unique(p)[::-1]
    expected_failures = np.empty(n)
    pos, before = 0, 0.0
    for v in values:
        group = fail[p == v]
        size, rate = len(group), group.mean()
        expected_failures[pos:pos + size] = before + rate * np.arange(1, size + 1)
        before += group.sum()
        pos += size
    return float(np.mean(expected_failures / np.arange(1, n + 1)))


def aurc_oracle(y):
    n = len(y)
    ordered = np.sort(1.0 - y)  # successes (0 failures) first
    return float(np.mean(np.cumsum(ordered) / np.arange(1, n + 1)))


def forecast_values(p, y):
    p, y = np.asarray(p, dtype=float), np.asarray(y, dtype=float)
    ew = bins_equal_width(p, y, 15)
    em = bins_equal_mass(p, y, 10)
    ece15, mce15 = ece_mce(ew, len(p))
    ece10, mce10 = ece_mce(em, len(p))
    two_classes = len(np.unique(y)) == 2
    aurc = aurc_expected_over_ties(p, y)
    oracle = aurc_oracle(y)
    return {
        "ece_width_15": ece15,
        "mce_width_15": mce15,
        "ece_mass_10": ece10,
        "mce_mass_10": mce10,
        "brier": float(brier_score_loss(y, p)),
        "auroc": float(roc_auc_score(y, p)) if two_classes else None,
        "aurc": aurc,
        "oracle_aurc": oracle,
        "e_aurc": aurc - oracle,
        "bins_width_15": [[int(c), float(m), float(a)] for c, m, a in ew],
        "bins_mass_10": [[int(c), float(m), float(a)] for c, m, a in em],
    }


# ---------------------------------------------------------------- Ask-F1

def ask_dataset():
    rng = np.random.default_rng(7)
    sessions = []
    for _ in range(60):
        failed = bool(rng.random() < 0.4)
        escalations = []
        for _ in range(int(rng.integers(0, 3))):
            route = "senior" if rng.random() < 0.5 else "operator"
            u = rng.random()
            needed = True if u < 0.5 else (False if u < 0.85 else None)
            escalations.append({"route": route, "needed": needed})
        sessions.append({"escalations": escalations, "failed": failed})
    return sessions


def ask_scores(sessions, route):
    """sklearn on a flattened view: each marked escalation is a prediction 1 with truth
    `needed`; each failure with no escalation is a prediction 0 with truth 1."""
    truth, pred = [], []
    for s in sessions:
        for e in s["escalations"]:
            if e["needed"] is None or (route and e["route"] != route):
                continue
            truth.append(int(e["needed"]))
            pred.append(1)
        if s["failed"] and not s["escalations"]:
            truth.append(1)
            pred.append(0)
    prec, rec, f1, _ = precision_recall_fscore_support(
        truth, pred, average="binary", zero_division=np.nan
    )
    as_opt = lambda v: None if np.isnan(v) else float(v)
    return {"precision": as_opt(prec), "recall": as_opt(rec), "f1": as_opt(f1)}


# ---------------------------------------------------------------- routing

def routing_datasets():
    return {
        "threshold_sweep": {
            "junior": [0.02, 0.41],
            "senior": [0.30, 0.83],
            "policies": [
                [0.05, 0.52], [0.08, 0.61], [0.11, 0.66], [0.11, 0.63], [0.15, 0.71],
                [0.19, 0.70], [0.24, 0.79], [0.33, 0.86], [0.01, 0.45],
            ],
            "targets": [0.5, 0.8, 0.95],
        },
        "dip_then_recover": {
            "junior": [1.0, 0.2],
            "senior": [5.0, 0.7],
            "policies": [[2.0, 0.5], [3.0, 0.3], [4.0, 0.65], [4.5, 0.66]],
            "targets": [0.5, 0.6, 0.9, 1.0],
        },
    }


def routing_values(d):
    cj, aj = d["junior"]
    cs, as_ = d["senior"]
    knots = {0.0: 0.0, 1.0: 1.0}
    for c, a in d["policies"]:
        x, g = (c - cj) / (cs - cj), (a - aj) / (as_ - aj)
        if 0.0 <= x <= 1.0:
            knots[x] = max(g, knots.get(x, -np.inf))
    xs = np.array(sorted(knots))
    gs = np.array([knots[x] for x in xs])
    apgr = float(np.trapezoid(gs, xs))
    cpt = {}
    for t in d["targets"]:
        hit = np.nonzero(gs >= t)[0]
        if len(hit) == 0:
            cpt[str(t)] = None
        elif hit[0] == 0:
            cpt[str(t)] = float(xs[0])
        else:
            k = hit[0]
            cpt[str(t)] = float(np.interp(t, [gs[k - 1], gs[k]], [xs[k - 1], xs[k]]))
    pts = sorted(d["policies"], key=lambda q: (q[0], -q[1]))
    frontier, best = [], -np.inf
    for c, a in pts:
        if a > best:
            frontier.append([c, a])
            best = a
    return {"knots": [[float(x), float(g)] for x, g in zip(xs, gs)], "apgr": apgr,
            "cpt": cpt, "frontier": frontier}


def main():
    out = {"forecasts": {}, "ask": {}, "routing": {}}
    for name, (p, y) in forecast_datasets().items():
        out["forecasts"][name] = {"p": p, "y": y, "expected": forecast_values(p, y)}
    sessions = ask_dataset()
    out["ask"] = {
        "sessions": sessions,
        "expected": {
            "pooled": ask_scores(sessions, None),
            "senior": ask_scores(sessions, "senior"),
            "operator": ask_scores(sessions, "operator"),
        },
    }
    for name, d in routing_datasets().items():
        out["routing"][name] = {**d, "expected": routing_values(d)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
