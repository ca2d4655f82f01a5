#!/usr/bin/env python3
"""Checks python/ppboost_model.py against `ppboost predict --scores`.

Builds ppboost from this checkout, trains a small model of every kind ppboost
writes (SAMME with stumps, NCC and logistic regression, from `sim` and
`simulate`; DP-GBDT with the newton, dpboost, para, seq and np methods; PFDS's
linear predictors, LogReg and SVM; two and three classes), runs both predictors on the same rows (the training file,
a file of edge cases: values outside the bounds, at the bounds, on bin edges
and stump thresholds, in odd notations, and files with missing values under
every fill policy), and fails unless every row has the same predicted class
and every score agrees within 1e-9. The loader is checked on its own too:
random CSV files with every quirk (python/testdata/encode runs Go's
dataset.LoadCSV on them) must give the same rows, the same values exactly and
the same refusals under every missing-value policy. Negative controls: a
model with one tree's leaves moved by 1e-6, one with a round's alpha moved
by 1e-6, and a three-class PFDS model with one weight moved by 1e-6, must fail
the comparison. Needs go and python3 (standard library
only); run from anywhere:

    python3 python/test_reader.py
"""

import csv
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import ppboost_model  # noqa: E402

TOL = 1e-9  # the tolerance: probabilities differ by an ulp of exp at most


def sh(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit("FAIL: %s: exit %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r.stdout


def compare(go_text, py_text):
    """(ok, max score difference, message)."""
    g = list(csv.reader(io.StringIO(go_text)))
    p = list(csv.reader(io.StringIO(py_text)))
    if g[0] != p[0]:
        return False, None, "headers differ: %r %r" % (g[0], p[0])
    if len(g) != len(p):
        return False, None, "%d rows against %d" % (len(g) - 1, len(p) - 1)
    worst = 0.0
    for i, (a, b) in enumerate(zip(g[1:], p[1:])):
        if a[0] != b[0]:
            return False, worst, "row %d: class %r against %r" % (i + 1, a[0], b[0])
        for x, y in zip(a[1:], b[1:]):
            worst = max(worst, abs(float(x) - float(y)))
    if worst > TOL:
        return False, worst, "scores differ by %.3g > %g" % (worst, TOL)
    return True, worst, "%d rows" % (len(g) - 1)


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def main():
    start = time.time()
    tmp = tempfile.mkdtemp(prefix="ppboost-pyreader-")
    try:
        return run(tmp, start)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp, start):
    exe = os.path.join(tmp, "ppboost")
    sh(["go", "build", "-o", exe, "./cmd/ppboost"], cwd=ROOT)
    reader = os.path.join(HERE, "ppboost_model.py")
    P = lambda *a: os.path.join(tmp, *a)  # noqa: E731
    rnd = random.Random(21)

    # Data. fruit: 3 classes, numeric and categorical, with public bounds
    # narrower than the data (so predict clips). bin: 2 classes, made up here.
    # syn: ppboost's synthetic problem, whose schema is [-1, 1] (raw = scaled).
    shutil.copy(os.path.join(ROOT, "dataset/testdata/fruit.csv"), P("fruit.csv"))
    fruit_schema = {"version": 1, "label": "label", "classes": ["apple", "lemon", "plum"], "columns": [
        {"name": "weight_g", "kind": "numeric", "min": 30, "max": 250},
        {"name": "diameter_mm", "kind": "numeric", "min": 20, "max": 120},
        {"name": "colour", "kind": "categorical", "categories": ["green", "purple", "red", "yellow"]}]}
    with open(P("fruit.csv.schema.json"), "w") as f:
        json.dump(fruit_schema, f)
    rows = []
    for _ in range(400):
        a, b, c = rnd.uniform(0, 10), rnd.gauss(0, 3), rnd.choice(["x", "y", "z"])
        yes = a + b + (2 if c == "z" else 0) + rnd.gauss(0, 1.5) > 6
        rows.append(["%.3f" % a, "%.4g" % b, c, "yes" if yes else "no"])
    write_csv(P("bin.csv"), ["a", "b", "c", "y"], rows)
    with open(P("bin.csv.schema.json"), "w") as f:
        json.dump({"version": 1, "label": "y", "classes": ["no", "yes"], "columns": [
            {"name": "a", "kind": "numeric", "min": 0, "max": 10},
            {"name": "b", "kind": "numeric", "min": -8, "max": 8},
            {"name": "c", "kind": "categorical", "categories": ["x", "y", "z"]}]}, f)

    # Models: (name, data, ppboost arguments).
    sim = ["sim", "--user-samples", "40", "--holdout", "60", "--owners-per-round", "5", "--samples-per-owner", "10", "--rounds", "3"]
    models = [
        ("sim-stump-fruit", "fruit", sim + ["--learner", "stump", "--mechanism", "none"]),
        ("sim-stump-bin", "bin", sim + ["--learner", "stump", "--mechanism", "laplace", "--eps", "50"]),
        ("sim-ncc-fruit", "fruit", sim + ["--learner", "ncc", "--mechanism", "none"]),
        ("sim-ncc-bin", "bin", sim + ["--learner", "ncc", "--mechanism", "none"]),
        ("sim-logreg-fruit", "fruit", sim + ["--learner", "logreg", "--mechanism", "none"]),
        ("sim-logreg-bin", "bin", sim + ["--learner", "logreg", "--mechanism", "pm", "--eps", "20"]),
        ("simulate-stump-fruit", "fruit", ["simulate", "--owners", "20", "--owners-per-round", "5", "--samples-per-owner", "10",
                                           "--rounds", "3", "--user-samples", "40", "--holdout", "60", "--mechanism", "none"]),
        ("newton-bin", "bin", ["dpboost", "--eps", "5", "--noise-seed", "3"]),
        ("newton-fruit", "fruit", ["dpboost", "--eps", "5", "--noise-seed", "3"]),
        ("dpboost-bin", "bin", ["dpboost", "--method", "dpboost", "--eps", "20", "--trees", "10", "--depth", "3", "--noise-seed", "3"]),
        ("dpboost-fruit", "fruit", ["dpboost", "--method", "dpboost", "--eps", "20", "--trees", "8", "--depth", "3", "--noise-seed", "3"]),
        ("para-fruit", "fruit", ["dpboost", "--method", "para", "--eps", "20", "--trees", "5", "--depth", "2", "--noise-seed", "3"]),
        ("seq-bin", "bin", ["dpboost", "--method", "seq", "--eps", "20", "--trees", "5", "--depth", "2", "--noise-seed", "3"]),
        ("np-fruit", "fruit", ["dpboost", "--method", "np", "--trees", "6", "--depth", "4", "--bins", "16", "--clip-gradients"]),
        ("sim-logreg-syn", "syn", ["sim", "--data", "synthetic", "--user-samples", "200", "--holdout", "300", "--owners-per-round", "20",
                                   "--samples-per-owner", "20", "--rounds", "3", "--mechanism", "none", "--learner", "logreg"]),
        ("sim-stump-syn", "syn", ["sim", "--data", "synthetic", "--user-samples", "200", "--holdout", "300", "--owners-per-round", "20",
                                  "--samples-per-owner", "20", "--rounds", "4", "--mechanism", "none"]),
        ("newton-syn", "syn", ["dpboost", "--data", "synthetic", "--samples", "2000", "--eps", "5", "--noise-seed", "3", "--trees", "40"]),
        ("fed-newton-bin", "bin", ["fed", "--eps", "5", "--owners", "10", "--trees", "20", "--min-parties", "3"]),
        ("fed-dpboost-bin", "bin", ["fed", "--method", "dpboost", "--eps", "20", "--owners", "10", "--trees", "4", "--ensemble-size", "2",
                                    "--min-parties", "3"]),
        ("pfds-bin", "bin", ["pfds", "sim", "--agents", "4", "--eps", "4", "--split", "iid"]),
        ("pfds-fruit", "fruit", ["pfds", "sim", "--agents", "4", "--eps", "4", "--split", "iid", "--force"]),
        ("pfds-svm-fruit", "fruit", ["pfds", "sim", "--agents", "4", "--eps", "4", "--split", "iid", "--learner", "svm", "--force"]),
    ]
    for name, data, args in models:
        a = [exe] + args + ["--model", P(name + ".json")]
        if data != "syn":
            a += ["--data", P(data + ".csv")]
        if args[0] == "dpboost":
            a.append("--quiet")
        sh(a, cwd=tmp)
        m = ppboost_model.load(P(name + ".json"))
        if isinstance(m, ppboost_model.PFDSModel):
            n = sum(1 for w in m.w if w != 0)  # a predictor of all-zero weights tests nothing
        else:
            n = len(m.rounds) if isinstance(m, ppboost_model.SammeModel) else sum(len(b) for b in m.boosters)
        if n == 0:
            raise SystemExit("FAIL: %s: a model without rounds or trees tests nothing" % name)

    # Edge cases in raw units: out of bounds, at the bounds, on the newton
    # (32 bins) and dpboost (255 bins) bin edges, odd number notations,
    # padding, quotes.
    def raw_at(col, s):  # the raw value whose scaled value is s (up to rounding)
        lo, hi = col["min"], col["max"]
        return repr((lo / 2 + hi / 2) + (hi / 2 - lo / 2) * s)
    fw, fd = fruit_schema["columns"][0], fruit_schema["columns"][1]
    edge = [["-5", "1e3", "red", "plum"], ["30", "120", "green", "apple"], ["250", "20", "yellow", "lemon"],
            ["0x1.8p7", "+8.5E1", "purple", "plum"], ["  140 ", " .5", " yellow", "apple"], ["1e-400", "-0", "red", "plum"]]
    for n in (32, 255, 16):
        for k in range(0, n + 1, max(1, n // 8)):
            s = -1 + 2 * k / n
            edge.append([raw_at(fw, s), raw_at(fd, -s), rnd.choice(["green", "purple", "red", "yellow"]), rnd.choice(["apple", "lemon", "plum"])])
    write_csv(P("fruit-edge.csv"), ["weight_g", "diameter_mm", "colour", "label"], edge)
    # Missing values, with the columns in another order.
    miss = [["apple", "red", "NA", "150"], ["lemon", "", "60", "?"], ["plum", "purple", "null", ""],
            ["apple", "yellow", "70", "N/A"], ["plum", "", "NaN", "40"], ["lemon", "green", "55", "100"]]
    write_csv(P("fruit-miss.csv"), ["label", "colour", "diameter_mm", "weight_g"], miss)
    # One row with gaps: scored alone with the model's stored fill values (the
    # file has none of its own to fill from).
    write_csv(P("fruit-gap.csv"), ["label", "colour", "diameter_mm", "weight_g"], [miss[1]])
    bin_edge = [["0", "-8", "x", "no"], ["10", "8", "z", "yes"], ["-1", "99", "y", "no"], ["5", "0", "z", "yes"], ["2.5", "-4", "x", "yes"]]
    for k in range(0, 33):
        bin_edge.append([repr(10 * k / 32), repr(-8 + 16 * k / 32), "xyz"[k % 3], "no" if k % 2 else "yes"])
    write_csv(P("bin-edge.csv"), ["a", "b", "c", "y"], bin_edge)
    # Synthetic rows, raw = scaled (within [-1, 1], so that --scaled reads them as predict does):
    # random values, bin edges, the stump thresholds.
    syn_features = ["x%d" % j for j in range(20)]
    syn = []
    for i in range(200):
        syn.append([repr(rnd.uniform(-1, 1)) for _ in syn_features] + [str(i % 2)])
    for k in range(0, 33):
        syn.append([repr(-1 + 2 * ((k + j) % 33) / 32) for j in range(20)] + [str(k % 2)])
    stumps = json.load(open(P("sim-stump-syn.json")))
    for r in stumps["rounds"]:
        st = r["base"]["stump"]
        row = [repr(rnd.uniform(-1, 1)) for _ in syn_features]
        row[st["feature"]] = repr(st["threshold"])
        syn.append(row + ["1"])
    write_csv(P("syn.csv"), syn_features + ["label"], syn)

    # Runs: (model, data file, extra arguments for both predictors).
    runs = []
    for name, data, args in models:
        if data == "fruit":
            runs += [(name, "fruit.csv", []), (name, "fruit-edge.csv", [])]
            runs += [(name, "fruit-miss.csv", ["--missing", p]) for p in ("skip", "zero", "mean")]
            if args[0] not in ("dpboost", "fed", "pfds"):  # dpboost, fed and pfds models store no fill values: a one-row gap has nothing to fill from
                runs += [(name, "fruit-gap.csv", ["--missing", p]) for p in ("zero", "mean")]
        elif data == "bin":
            runs += [(name, "bin.csv", []), (name, "bin-edge.csv", [])]
        else:
            runs += [(name, "syn.csv", [])]
    worst = 0.0
    kinds = {}
    for name, data, extra in runs:
        go = sh([exe, "predict", "--model", P(name + ".json"), "--data", P(data), "--scores"] + extra, cwd=tmp)
        py = sh([sys.executable, reader, P(name + ".json"), P(data)] + extra)
        ok, w, msg = compare(go, py)
        if not ok:
            raise SystemExit("FAIL: %s on %s %s: %s" % (name, data, " ".join(extra), msg))
        worst = max(worst, w)
        kinds[name] = max(kinds.get(name, 0.0), w)
        if data == "syn.csv":  # the same rows through --scaled
            py2 = sh([sys.executable, reader, P(name + ".json"), P(data), "--scaled"])
            ok, w, msg = compare(go, py2)
            if not ok:
                raise SystemExit("FAIL: %s on %s --scaled: %s" % (name, data, msg))
    for name in kinds:
        print("ok  %-22s max |score difference| %.3g" % (name, kinds[name]))

    # Both refuse what the loader refuses.
    write_csv(P("bad.csv"), ["weight_g", "diameter_mm", "colour", "label"], [["100", "70", "blue", "apple"]])
    for data in ("bad.csv", "fruit-miss.csv"):
        g = subprocess.run([exe, "predict", "--model", P("newton-fruit.json"), "--data", P(data), "--scores"], capture_output=True)
        p = subprocess.run([sys.executable, reader, P("newton-fruit.json"), P(data)], capture_output=True)
        if g.returncode == 0 or p.returncode == 0:
            raise SystemExit("FAIL: %s: ppboost exit %d, python exit %d; want both to refuse it" % (data, g.returncode, p.returncode))

    check_loader(tmp, rnd)

    # A partial model (a session that stopped after M' of M rounds) loads and
    # predicts like any other, and both readers say it is partial.
    d = json.load(open(P("sim-stump-fruit.json")))
    d["partial"] = {"rounds": len(d["rounds"]), "planned": len(d["rounds"]) + 1, "reason": "round %d: no learner accepted" % (len(d["rounds"]) + 1)}
    with open(P("partial-fruit.json"), "w") as f:
        json.dump(d, f)
    g = subprocess.run([exe, "predict", "--model", P("partial-fruit.json"), "--data", P("fruit.csv"), "--scores"], capture_output=True, text=True, cwd=tmp)
    p = subprocess.run([sys.executable, reader, P("partial-fruit.json"), P("fruit.csv")], capture_output=True, text=True)
    ok, w, msg = (False, None, "no output") if g.returncode or p.returncode else compare(g.stdout, p.stdout)
    if not ok or "partial model" not in g.stderr or "partial model" not in p.stderr:
        raise SystemExit("FAIL: partial model: ppboost exit %d (%s), python exit %d (%s), %s" % (g.returncode, g.stderr, p.returncode, p.stderr, msg))
    print("ok  partial model: same predictions, both say it is partial")

    # The gap row scores the same alone as among the other rows of
    # fruit-miss.csv (the model's fill values, not the file's); a model
    # written before fill values loads, fills from the file and both say so.
    for name in ("sim-stump-fruit", "sim-logreg-fruit"):
        alone = sh([sys.executable, reader, P(name + ".json"), P("fruit-gap.csv"), "--missing", "mean"]).splitlines()[1]
        among = sh([sys.executable, reader, P(name + ".json"), P("fruit-miss.csv"), "--missing", "mean"]).splitlines()[2]
        if alone != among:
            raise SystemExit("FAIL: %s: the gap row scores %s alone and %s among other rows" % (name, alone, among))
    if "fill" in json.load(open(P("newton-fruit.json"))):
        raise SystemExit("FAIL: newton-fruit.json (dpboost) stores fill values its eps does not cover")
    d = json.load(open(P("sim-logreg-fruit.json")))
    if "fill" not in d:
        raise SystemExit("FAIL: sim-logreg-fruit.json stores no fill values")
    del d["fill"]
    with open(P("old-fruit.json"), "w") as f:
        json.dump(d, f)
    g = subprocess.run([exe, "predict", "--model", P("old-fruit.json"), "--data", P("fruit-miss.csv"), "--scores", "--missing", "mean"],
                       capture_output=True, text=True, cwd=tmp)
    p = subprocess.run([sys.executable, reader, P("old-fruit.json"), P("fruit-miss.csv"), "--missing", "mean"], capture_output=True, text=True)
    ok, w, msg = (False, None, "no output") if g.returncode or p.returncode else compare(g.stdout, p.stdout)
    if not ok or "no training fill values" not in g.stderr or "no training fill values" not in p.stderr:
        raise SystemExit("FAIL: old model: ppboost exit %d (%s), python exit %d (%s), %s" % (g.returncode, g.stderr, p.returncode, p.stderr, msg))
    print("ok  fill values: a gap row scores the same alone and among rows; an old model fills from the file and both say so")

    # Negative controls: a model changed by 1e-6 must fail the comparison.
    def perturbed(name, change):
        d = json.load(open(P(name + ".json")))
        change(d)
        path = P(name + "-perturbed.json")
        with open(path, "w") as f:
            json.dump(d, f)
        go = sh([exe, "predict", "--model", P(name + ".json"), "--data", P("fruit.csv"), "--scores"], cwd=tmp)
        py = sh([sys.executable, reader, path, P("fruit.csv")])
        ok, w, msg = compare(go, py)
        if ok:
            raise SystemExit("FAIL: negative control %s passed the comparison (%s)" % (name, msg))
        print("ok  negative control %s fails: %s" % (name, msg))

    def leaf(d):
        t = d["boosters"][0][0]
        t["leaf"] = [v + 1e-6 for v in t["leaf"]]

    def alpha(d):
        d["rounds"][0]["alpha"] += 1e-6
    def weight(d):
        d["weights"][2][0] += 1e-6

    perturbed("dpboost-fruit", leaf)
    perturbed("pfds-fruit", weight)
    perturbed("sim-stump-fruit", alpha)
    print("PASS: %d models, %d runs, max |score difference| %.3g (tolerance %g), %.1f s" % (
        len(models), len(runs), worst, TOL, time.time() - start))
    return 0


LOADER_SCHEMA = {"version": 1, "label": "y", "classes": ["no", "yes", "a,b"], "columns": [
    {"name": "n", "kind": "numeric", "min": -3.5, "max": 1000},
    {"name": "m", "kind": "numeric", "min": 0, "max": 1},
    {"name": "c", "kind": "categorical", "categories": ["red", "?", "a b", "x,y", "q\"t"]},
    {"name": "skip", "kind": "ignore"}]}


def random_csv(rnd):
    """A small CSV file (bytes) with the quirks real files have: numbers in
    every notation, missing-value marks, quoting (also across lines and
    broken), padding (also tabs before a quote), blank lines, CRLF and lone
    CR line ends, a byte order mark, and now and then a row of the wrong
    width."""
    def num():
        k = rnd.random()
        if k < 0.3:
            return repr(rnd.uniform(-10, 1100))
        if k < 0.45:
            return rnd.choice(["1e3", "-3.5", "1000", "0x1p3", "1_000", ".5", "5.", "+2", "-0", "1e-400", "1e400", "inf", "0.0000001",
                               "1_0.5", "1__0", "_1", "0x_1p1", "1e1_0", "12e", "abc", "1.5e308", "999.9999999999999"])
        if k < 0.6:
            return rnd.choice(["", "?", "NA", "n/a", "NaN", "null", "Null", " na "])
        if k < 0.8:
            return "%.*g" % (rnd.randint(1, 17), rnd.uniform(-5, 1005))
        return repr(rnd.random())

    def cat():
        return rnd.choice(["red", "?", "a b", '"x,y"', '"q""t"', "", " red ", '"red"', "blue", "\tred", '"a b"',
                           "red", "?", "a b", '"x,y"', "red", '\t"x,y"', 're"d', '"red"x', '"x,\ny"', '"red" ', ' \u00a0"?"'])

    def lab():
        return rnd.choice(["no", "yes", '"a,b"', " yes", "", "maybe"] + ["no", "yes"] * 4)

    cols = ["n", "m", "c", "y"] + (["skip"] if rnd.random() < 0.5 else [])
    rnd.shuffle(cols)
    gen = {"n": num, "m": num, "c": cat, "y": lab, "skip": lambda: rnd.choice(["x", "", '"1,2"'])}
    nl = rnd.choice(["\n"] * 7 + ["\r\n", "\r\n", "\r"])
    head = ",".join((" %s " % c) if rnd.random() < 0.1 else c for c in cols)
    if rnd.random() < 0.1:
        head = "\ufeff" + head
    lines = [head]
    for _ in range(rnd.randint(1, 6)):
        if rnd.random() < 0.05:
            lines.append("")
            continue
        f = [gen[c]() for c in cols]
        if rnd.random() < 0.03:
            f.append("extra")
        sep = ", " if rnd.random() < 0.2 else ","
        lines.append(sep.join(f))
    if rnd.random() < 0.03:
        lines[-1] += '"'  # an unterminated quote, or a bare one
    return (nl.join(lines) + (nl if rnd.random() < 0.8 else "")).encode("utf-8")


def check_loader(tmp, rnd, files=400):
    """Differential test of the loader: random CSV files through Go's
    dataset.LoadCSV (python/testdata/encode) and ppboost_model's reader,
    under every missing-value policy; the same rows, values (exactly) and
    refusals."""
    schema_path = os.path.join(tmp, "loader.schema.json")
    with open(schema_path, "w") as f:
        json.dump(LOADER_SCHEMA, f)
    schema = ppboost_model.Schema(LOADER_SCHEMA)
    paths = []
    for i in range(files):
        paths.append(os.path.join(tmp, "l%03d.csv" % i))
        with open(paths[-1], "wb") as f:
            f.write(random_csv(rnd))
    accepted = 0
    for policy in ppboost_model.MISSING_POLICIES:
        go = sh(["go", "run", "./python/testdata/encode", schema_path, policy] + paths, cwd=ROOT).split("# ")[1:]
        for path, g in zip(paths, go):
            try:
                header, records = ppboost_model.read_records(path)
                X, Y = ppboost_model.encode_records(schema, header, records, policy, path)
                if any(y is None for y in Y):
                    raise ppboost_model.DataError("no label column")  # predict needs one
                py = "".join(",".join([ppboost_model.go_format_float(v) for v in x] + [str(y)]) + "\n" for x, y in zip(X, Y))
                accepted += 1
            except ppboost_model.DataError:
                py = "ERR\n"
            g = g.split("\n", 1)[1]
            if g != py:
                raise SystemExit("FAIL: loader, --missing %s, %s:\n%r\nGo:\n%sPython:\n%s" % (
                    policy, path, open(path, "rb").read(), g, py))
    print("ok  loader: %d random CSV files x %d missing-value policies, %d accepted, the same rows and values" % (
        files, len(ppboost_model.MISSING_POLICIES), accepted))


if __name__ == "__main__":
    sys.exit(main())
