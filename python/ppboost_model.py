#!/usr/bin/env python3
"""Read ppboost model files and predict with them, in pure Python.

Standard library only (Python 3.9 or later). It reads every model file ppboost
writes:

- "ppboost-model" (SAMME, written by ``ppboost sim``, ``simulate`` and
  ``user``): rounds of (alpha, base learner), the learner a decision stump, a
  nearest-centroid classifier (NCC) or a logistic regression; a class's score
  is the sum of alpha over the rounds whose learner predicts it, and the
  prediction is the first class with the largest score;
- "ppboost-dpboost-model" (``ppboost dpboost`` and ``fed``): complete binary
  trees over a public binning, one booster (a sum of trees) for two classes
  or a regression, K for K > 2 classes. Method "newton" gives probabilities
  (sigmoid for two classes, softmax over K boosters); the square-loss methods
  (dpboost, para, seq, np) give raw scores (-F, F for two classes, class 1
  when F > 0; one-vs-rest outputs otherwise);
- "ppboost-pfds-linear" (``ppboost pfds``): one PFDS agent's linear
  predictor; version 1 one weight vector for two classes (scores -F, F,
  class 1 when F >= 0), version 2 one vector per class for K > 2 (the K
  linear scores, the class their argmax).

Raw CSV rows are turned into features with the schema embedded in the model,
exactly as ppboost's loader does (dataset/schema.go and csv.go):
numeric values scaled by the schema's public bounds to [-1, 1] and clipped,
categorical columns one-hot, the same missing-value policies (error, skip,
zero, mean; gaps filled with the model's stored training values, its "fill",
where it has them, else from the file). Every step repeats the Go code's floating-point operations in
the same order, so classes are identical and scores equal to ``ppboost
predict --scores`` (probabilities to within an ulp or so of exp).

Command line (prints the same CSV as ``ppboost predict --scores``)::

    python3 python/ppboost_model.py MODEL.json DATA.csv [--missing POLICY] [--out FILE]
    python3 python/ppboost_model.py MODEL.json SCALED.csv --scaled   # rows already in [-1, 1]

From Python::

    import ppboost_model
    m = ppboost_model.load("model.json")
    X, _ = m.read_csv("data.csv")          # or m.encode(record_dict)
    for x in X:
        print(m.class_names[m.predict(x)], m.scores(x))
"""

import argparse
import gzip
import json
import math
import re
import sys

SAMME_FORMAT = "ppboost-model"
DPBOOST_FORMAT = "ppboost-dpboost-model"
PFDS_FORMAT = "ppboost-pfds-linear"
MAX_MAGNITUDE = 1e15  # dataset.MaxMagnitude
MAX_BINS = 256  # dpboost.MaxBins


class ModelError(ValueError):
    """An unreadable or invalid model file."""


class DataError(ValueError):
    """A data file the loader refuses (names the line, column and value)."""


# ---------------------------------------------------------------------------
# Go's string and number rules

# Unicode White_Space, which Go's strings.TrimSpace trims (Python's str.strip
# trims more: U+001C-U+001F).
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def go_trim_space(s):
    return s.strip(_GO_SPACE)


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+\Z")
_SPECIAL = re.compile(r"[+-]?(?:inf|infinity|nan)\Z", re.IGNORECASE)


def _underscore_ok(s):
    """strconv's underscoreOK: an underscore only between digits (or after
    a base prefix, before a digit)."""
    saw, i = "^", 0
    if s[:1] in ("+", "-"):
        s = s[1:]
    hexa = False
    if len(s) >= 2 and s[0] == "0" and s[1].lower() in "box":
        i, saw, hexa = 2, "0", s[1].lower() == "x"
    while i < len(s):
        c = s[i]
        i += 1
        if "0" <= c <= "9" or hexa and "a" <= c.lower() <= "f":
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


def parse_value(v):
    """dataset.parseValue: a finite float of magnitude at most 1e15.

    Accepts what Go's strconv.ParseFloat accepts: decimal and hexadecimal
    floats, with underscores between digits."""
    if "_" in v:
        if not _underscore_ok(v):
            raise ValueError("not a number")
        v = v.replace("_", "")
    if _DECIMAL.match(v):
        x = float(v)
    elif _HEX.match(v):
        try:
            x = float.fromhex(v)
        except OverflowError:
            raise ValueError("not finite")
    elif _SPECIAL.match(v):
        raise ValueError("not finite")
    else:
        raise ValueError("not a number")
    if math.isinf(x) or math.isnan(x):
        raise ValueError("not finite")  # an overflowing number (ErrRange)
    if abs(x) > MAX_MAGNITUDE:
        raise ValueError("magnitude too large: |v| > 1e+15")
    return x


def is_missing(v):
    """dataset.IsMissing (v already trimmed)."""
    return v.lower() in ("", "?", "na", "n/a", "nan", "null")


def clip(v):
    if v < -1:
        return -1.0
    if v > 1:
        return 1.0
    return v


def go_format_float(v):
    """strconv.FormatFloat(v, 'g', -1, 64): the shortest decimal that reads
    back as v, in %e form when the exponent is < -4 or >= 6 (the shortest
    format's rule), else in %f form."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    neg = math.copysign(1.0, v) < 0
    r = repr(abs(v))  # Python's repr is the shortest round-trip decimal too
    mant, _, exp = r.partition("e")
    e10 = int(exp) if exp else 0
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    dp = len(ip) + e10 - (len(ip + fp) - len(digits))  # decimal point position
    digits = digits.rstrip("0")
    if not digits:  # zero
        return "-0" if neg else "0"
    nd = len(digits)
    x = dp - 1
    sign = "-" if neg else ""
    if x < -4 or x >= 6:
        m = digits[0] + ("." + digits[1:] if nd > 1 else "")
        return "%s%se%s%02d" % (sign, m, "-" if x < 0 else "+", abs(x))
    if dp <= 0:
        return sign + "0." + "0" * (-dp) + digits
    if dp >= nd:
        return sign + digits + "0" * (dp - nd)
    return sign + digits[:dp] + "." + digits[dp:]


def _go_csv_field(f):
    """A field as Go's encoding/csv Writer writes it."""
    need = f == "\\." or any(c in f for c in ',"\r\n') or (f != "" and f[0] in _GO_SPACE)
    if not need:
        return f
    return '"' + f.replace('"', '""') + '"'


def go_csv_line(fields):
    return ",".join(_go_csv_field(f) for f in fields) + "\n"


# ---------------------------------------------------------------------------
# Schema: raw records to scaled features (dataset/schema.go)

MISSING_POLICIES = ("error", "skip", "zero", "mean")


class Schema:
    def __init__(self, d):
        self.label = d["label"]
        self.classes = list(d["classes"])
        self.columns = []
        for c in d.get("columns") or []:
            kind = c["kind"]
            col = {"name": c["name"], "kind": kind}
            if kind == "numeric":
                lo, hi = float(c.get("min", 0)), float(c.get("max", 0))
                # Column.scale: midpoint and half-width without overflow
                col["mid"], col["half"] = lo / 2 + hi / 2, hi / 2 - lo / 2
                col["min"], col["max"] = lo, hi
                if not (col["half"] > 0) or math.isinf(col["mid"]) or math.isinf(lo) or math.isinf(hi):
                    raise ModelError("schema column %r: bounds [%r, %r] must be finite with min < max" % (c["name"], lo, hi))
            elif kind == "categorical":
                col["categories"] = list(c["categories"])
                if not col["categories"]:
                    raise ModelError("schema column %r: no categories" % c["name"])
            elif kind != "ignore":
                raise ModelError("schema column %r: unknown kind %r" % (c["name"], kind))
            self.columns.append(col)

    def features(self):
        f = []
        for c in self.columns:
            if c["kind"] == "numeric":
                f.append(c["name"])
            elif c["kind"] == "categorical":
                f.extend(c["name"] + "=" + cat for cat in c["categories"])
        return f

    def dim(self):
        return len(self.features())


class Encoder:
    """Schema.NewEncoder: maps records laid out as header to features."""

    def __init__(self, schema, header):
        self.s = schema
        self.width = len(header)
        pos = {}
        for i, h in enumerate(header):
            if h in pos:
                raise DataError("invalid schema: the header names column %r twice" % h)
            pos[h] = i
        self.label = pos.pop(schema.label, -1)
        self.col, self.offset, self.cats = [], [], []
        dim = 0
        for c in schema.columns:
            p = pos.pop(c["name"], -1)
            if p < 0 and c["kind"] != "ignore":
                raise DataError("invalid schema: schema column %r is not in the header" % c["name"])
            self.col.append(p)
            self.offset.append(dim)
            self.cats.append({cat: k for k, cat in enumerate(c.get("categories", []))})
            if c["kind"] == "numeric":
                dim += 1
            elif c["kind"] == "categorical":
                dim += len(c["categories"])
        for h in header:
            if h in pos:
                raise DataError("invalid schema: header column %r is not in the schema (declare it \"ignore\" to skip it)" % h)
        self.dim = dim
        self.class_index = {c: k for k, c in enumerate(schema.classes)}

    def encode(self, fields, st=None):
        """Encoder.encode: one record's features; st carries the missing-value
        policy and the running sums (None: strict). Returns None for a row to
        skip."""
        if len(fields) != self.width:
            raise DataError("wrong number of fields: %d fields, the header has %d" % (len(fields), self.width))
        out = [0.0] * self.dim
        for i, c in enumerate(self.s.columns):
            kind = c["kind"]
            if kind == "numeric":
                v = go_trim_space(fields[self.col[i]])
                if is_missing(v):
                    if not self._missing(i, v, out, st):
                        return None
                    continue
                try:
                    x = parse_value(v)
                except ValueError as e:
                    raise DataError("column %r: value %r: %s" % (c["name"], v, e))
                y = clip((x - c["mid"]) / c["half"])
                out[self.offset[i]] = y
                if st is not None:
                    st["sum"][i] += y
                    st["count"][i] += 1
            elif kind == "categorical":
                v = go_trim_space(fields[self.col[i]])
                if v == "" and v not in self.cats[i]:
                    if not self._missing(i, v, out, st):
                        return None
                    continue
                k = self.cats[i].get(v)
                if k is None:
                    raise DataError("column %r: value %r: unknown category" % (c["name"], v))
                out[self.offset[i] + k] = 1.0
                if st is not None:
                    st["catn"][i][k] += 1
        return out

    def _missing(self, i, v, out, st):
        """Handles a missing value of column i; False means skip the row."""
        c = self.s.columns[i]
        policy = "error" if st is None else st["policy"]
        if policy == "error":
            raise DataError("column %r: value %r: missing value" % (c["name"], v))
        if policy == "skip":
            return False
        if policy == "zero" and c["kind"] == "numeric":
            out[self.offset[i]] = clip((0 - c["mid"]) / c["half"])
        elif not self._fill_from(st.get("fill"), i, out):
            # mean, or a categorical column under zero, without the model's
            # training value: filled from the file after the pass
            st["holes"].append((st["row"], i))
        return True

    def _fill_from(self, fill, i, out):
        """Encoder.fillFrom: column i's stored training value (the model's
        "fill"), scaled like any raw value or one-hot; False without one."""
        if fill is None:
            return False
        c = self.s.columns[i]
        if c["kind"] == "numeric":
            v = (fill.get("mean") or {}).get(c["name"])
            if v is None:
                return False
            out[self.offset[i]] = clip((v - c["mid"]) / c["half"])
            return True
        mode = fill.get("mode") or {}
        if c["name"] not in mode or mode[c["name"]] not in self.cats[i]:
            return False
        out[self.offset[i] + self.cats[i][mode[c["name"]]]] = 1.0
        return True

    def label_of(self, fields):
        v = go_trim_space(fields[self.label])
        if v == "":
            raise DataError("label column %r: empty label" % self.s.label)
        if v not in self.class_index:
            raise DataError("column %r: %r: unknown label" % (self.s.label, v))
        return self.class_index[v]

    def fill(self, st, X):
        """Encoder.fill: a numeric hole gets its column's mean (scaled and
        clipped values of this file), a categorical one the most frequent
        category (ties: the first)."""
        for row, i in st["holes"]:
            c = self.s.columns[i]
            if c["kind"] == "numeric":
                if st["count"][i] == 0:
                    raise DataError("column %r: missing value in every row, no mean to fill them with" % c["name"])
                X[row][self.offset[i]] = clip(st["sum"][i] / st["count"][i])
            else:
                best = -1
                for k, n in enumerate(st["catn"][i]):
                    if n > 0 and (best < 0 or n > st["catn"][i][best]):
                        best = k
                if best < 0:
                    raise DataError("column %r: missing value in every row, no category to fill them with" % c["name"])
                X[row][self.offset[i] + best] = 1.0


def _read_text(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[:2] == b"\x1f\x8b" or path.endswith(".gz"):
        b = gzip.decompress(b)
    # Go reads bytes: keep invalid UTF-8 (it then matches no category, as in Go).
    return b.decode("utf-8", errors="surrogateescape")


class GoCSVReader:
    """Go's encoding/csv Reader as ppboost configures it (comma ",",
    TrimLeadingSpace, strict quotes, any number of fields): lines end at
    "\n" ("\r\n" counts as "\n"; a lone "\r" does not end a line), empty
    lines are skipped, leading white space of a field is dropped (also before
    a quote), a quote inside an unquoted field or after a closing quote is an
    error. Python's csv module differs on several of these."""

    def __init__(self, text, name="data"):
        self.t, self.pos, self.line, self.name = text, 0, 0, name

    def _read_line(self):
        """(line, eof): the next line with its "\n", or ("", True) at the end."""
        self.line += 1
        if self.pos >= len(self.t):
            return "", True
        j = self.t.find("\n", self.pos)
        if j < 0:
            line, self.pos = self.t[self.pos:], len(self.t)
            if line.endswith("\r"):  # a trailing \r before EOF is dropped
                line = line[:-1]
        else:
            line, self.pos = self.t[self.pos:j + 1], j + 1
        if line.endswith("\r\n"):
            line = line[:-2] + "\n"
        return line, False

    def _error(self, line, what):
        return DataError("%s:%d: bad CSV: %s" % (self.name, line, what))

    def read(self):
        """(line, fields) of the next record, or None at the end."""
        while True:
            line, eof = self._read_line()
            if eof:
                return None
            if line not in ("", "\n"):
                break
        start = self.line
        fields = []
        while True:
            i = 0
            while i < len(line) and line[i] in _GO_SPACE:
                i += 1
            line = line[i:]
            if not line or line[0] != '"':  # an unquoted field
                i = line.find(",")
                field = line[:i] if i >= 0 else (line[:-1] if line.endswith("\n") else line)
                if '"' in field:
                    raise self._error(start, 'bare " in non-quoted field')
                fields.append(field)
                if i < 0:
                    return start, fields
                line = line[i + 1:]
                continue
            line, buf = line[1:], []
            while True:  # a quoted field, maybe over several lines
                i = line.find('"')
                if i >= 0:
                    buf.append(line[:i])
                    line = line[i + 1:]
                    if line[:1] == '"':
                        buf.append('"')
                        line = line[1:]
                    elif line[:1] == ",":
                        line = line[1:]
                        fields.append("".join(buf))
                        break
                    elif line in ("", "\n"):
                        fields.append("".join(buf))
                        return start, fields
                    else:
                        raise self._error(start, 'extraneous or missing " in quoted-field')
                elif line:
                    buf.append(line)
                    line, _ = self._read_line()
                else:
                    raise self._error(start, 'extraneous or missing " in quoted-field')


def read_records(path):
    """The header and (line, fields) records of a CSV file as ppboost reads
    it (dataset's csvReader): fields trimmed, blank lines skipped, a byte
    order mark dropped, every record as wide as the header."""
    rd = GoCSVReader(_read_text(path), path)
    first = rd.read()
    if first is None:
        raise DataError("%s:1: no data: empty file, want a header line" % path)
    line, header = first
    header = [go_trim_space(f) for f in header]
    h0 = header[0]
    header[0] = go_trim_space(h0[1:] if h0.startswith("\ufeff") else h0)
    if len(header) < 2 or "" in header or len(set(header)) != len(header):
        raise DataError("%s:%d: invalid schema: the header %r needs two or more distinct, non-empty names" % (path, line, header))
    records = []
    while True:
        r = rd.read()
        if r is None:
            break
        line, rec = r
        if len(rec) != len(header):
            raise DataError("%s:%d: wrong number of fields: %d fields, the header has %d" % (path, line, len(rec), len(header)))
        records.append((line, [go_trim_space(f) for f in rec]))
    return header, records


def encode_records(schema, header, records, missing="error", name="data", fill=None):
    """encodeAll: features (and labels when the header has the label column)
    of every record kept, in file order. fill is a model's "fill" (its
    training values for policies mean and zero; None fills from the file)."""
    if missing not in MISSING_POLICIES:
        raise ValueError("unknown missing-value policy %r (want %s)" % (missing, ", ".join(MISSING_POLICIES)))
    try:
        enc = Encoder(schema, header)
    except DataError as e:
        raise DataError("%s:1: %s" % (name, e))
    n = len(schema.columns)
    st = {"policy": missing, "fill": fill, "row": 0, "holes": [], "sum": [0.0] * n, "count": [0] * n,
          "catn": [[0] * len(c.get("categories", [])) for c in schema.columns]}
    X, Y = [], []
    for line, rec in records:
        st["row"] = len(X)
        try:
            x = enc.encode(rec, st)
            if x is None:
                continue
            y = enc.label_of(rec) if enc.label >= 0 else None
        except DataError as e:
            raise DataError("%s:%d: %s" % (name, line, e))
        X.append(x)
        Y.append(y)
    if not X:
        raise DataError("%s: no data rows%s" % (name, " (every row has a missing value)" if records else ""))
    enc.fill(st, X)
    return X, Y


# ---------------------------------------------------------------------------
# Models


def check_fill(fill, schema):
    """Fill.Check: the model's training values fit its schema."""
    if schema is None:
        raise ModelError("fill values without a schema")
    if not isinstance(fill.get("rows"), int) or fill["rows"] < 1:
        raise ModelError("fill: %r rows, want at least 1" % fill.get("rows"))
    mean, mode = fill.get("mean") or {}, fill.get("mode") or {}
    kinds = {c["name"]: c["kind"] for c in schema.columns}
    for c in schema.columns:
        if c["kind"] == "numeric":
            v = mean.get(c["name"])
            if not isinstance(v, (int, float)) or not (c["min"] <= v <= c["max"]):
                raise ModelError("fill: column %r: mean %r missing or outside the bounds [%r, %r]" % (c["name"], v, c["min"], c["max"]))
        elif c["kind"] == "categorical" and mode.get(c["name"]) not in c["categories"]:
            raise ModelError("fill: column %r: category %r missing or not one of the column's" % (c["name"], mode.get(c["name"])))
    for n in mean:
        if kinds.get(n) != "numeric":
            raise ModelError("fill: a mean for %r, not a numeric column of the schema" % n)
    for n in mode:
        if kinds.get(n) != "categorical":
            raise ModelError("fill: a category for %r, not a categorical column of the schema" % n)


def _sigmoid(z):
    """boost's and predict's sigmoid, without overflow."""
    if z >= 0:
        return 1 / (1 + math.exp(-z))
    e = math.exp(z)
    return e / (1 + e)


def _argmax(v):
    a = 0
    for i, x in enumerate(v):
        if x > v[a]:
            a = i
    return a


def _check_matrix(m, cols, what):
    for row in m:
        if len(row) != cols or any(not math.isfinite(v) for v in row):
            raise ModelError("%s: a row with %d values, want %d finite ones" % (what, len(row), cols))


class Model:
    """A loaded model. class_names is empty for a regression model."""

    kind = "score"  # "prob" when scores are probabilities

    def __init__(self, d):
        self.raw = d
        self.features = list(d["features"])
        self.class_names = list(d.get("class_names") or [])
        self.schema = Schema(d["schema"]) if d.get("schema") else None
        if self.schema is not None and self.schema.dim() != len(self.features):
            raise ModelError("schema has %d features, model %d" % (self.schema.dim(), len(self.features)))
        self.fill = d.get("fill")
        if self.fill is not None:
            check_fill(self.fill, self.schema)

    def read_csv(self, path, missing="error", schema=None):
        """Rows of a raw CSV file encoded with the model's schema (or schema,
        a Schema, for a model without one); returns (X, labels), labels None
        where the file has no label column."""
        s = self.schema or schema
        if s is None:
            raise DataError("the model has no schema: give one (--schema) or already-scaled rows (--scaled)")
        header, records = read_records(path)
        return encode_records(s, header, records, missing, path, self.fill if s is self.schema else None)

    def read_scaled_csv(self, path):
        """Rows of a CSV file whose columns include the model's features by
        name, already scaled (numeric in [-1, 1], one-hot 0/1): used as is."""
        header, records = read_records(path)
        pos = {h: i for i, h in enumerate(header)}
        missing = [f for f in self.features if f not in pos]
        if missing:
            raise DataError("%s: no column for features %s" % (path, ", ".join(missing)))
        X = []
        for line, rec in records:
            try:
                X.append([parse_value(rec[pos[f]]) for f in self.features])
            except ValueError as e:
                raise DataError("%s:%d: %s" % (path, line, e))
        return X, [None] * len(X)

    def predict(self, x):
        raise NotImplementedError

    def scores(self, x):
        raise NotImplementedError

    def _check_row(self, x):
        if len(x) != len(self.features):
            raise ValueError("a row of %d features, the model has %d" % (len(x), len(self.features)))


class SammeModel(Model):
    """boost.Model: argmax_k sum_m alpha_m [T_m(x) = k] (Ensemble.Predict)."""

    def __init__(self, d):
        super().__init__(d)
        if d.get("version") != 1:
            raise ModelError("version %r, this reader reads 1" % d.get("version"))
        self.classes = d["classes"]
        # A session that stopped early labels its model: {"rounds": M', "planned": M, "reason": ...}.
        self.partial = d.get("partial")
        if self.classes < 2 or len(self.class_names) != self.classes:
            raise ModelError("%d class names for %d classes" % (len(self.class_names), self.classes))
        K, F = self.classes, len(self.features)
        self.rounds = []
        for i, r in enumerate(d.get("rounds") or []):
            alpha, base = float(r["alpha"]), r["base"]
            if not (math.isfinite(alpha) and alpha > 0):
                raise ModelError("round %d: alpha %r" % (i + 1, alpha))
            kinds = [k for k in ("stump", "ncc", "logreg") if base.get(k) is not None]
            if len(kinds) != 1:
                raise ModelError("round %d: a base learner must have exactly one kind, has %s" % (i + 1, kinds))
            kind, b = kinds[0], base[kinds[0]]
            if kind == "stump":
                b = {"feature": b.get("feature", 0), "threshold": float(b.get("threshold", 0)),
                     "left": b.get("left", 0), "right": b.get("right", 0)}
                if not (0 <= b["feature"] < F and 0 <= b["left"] < K and 0 <= b["right"] < K and math.isfinite(b["threshold"])):
                    raise ModelError("round %d: bad stump %r" % (i + 1, b))
            elif kind == "ncc":
                b = [[float(v) for v in row] for row in b["centroids"]]
                if len(b) != K:
                    raise ModelError("round %d: ncc has %d centroids, want %d" % (i + 1, len(b), K))
                _check_matrix(b, F, "round %d: ncc" % (i + 1))
            else:
                b = [[float(v) for v in row] for row in b["theta"]]
                if len(b) != (1 if K == 2 else K):
                    raise ModelError("round %d: logreg has %d parameter vectors" % (i + 1, len(b)))
                _check_matrix(b, F + 1, "round %d: logreg" % (i + 1))
            self.rounds.append((alpha, kind, b))

    @staticmethod
    def _linear(theta, x):
        """theta[:d].x + theta[d], summed in Go's order."""
        d = len(x)
        s = theta[d]
        for j in range(d):
            s += theta[j] * x[j]
        return s

    def base_predict(self, kind, b, x):
        """Base.Predict."""
        if kind == "stump":
            return b["left"] if x[b["feature"]] < b["threshold"] else b["right"]
        if kind == "ncc":
            best, best_d = 0, math.inf
            for k, c in enumerate(b):
                d = 0.0
                for j, v in enumerate(c):
                    t = x[j] - v
                    d += t * t
                if d < best_d:
                    best, best_d = k, d
            return best
        if len(b) == 1:
            return 1 if self._linear(b[0], x) >= 0 else 0
        best, best_v = 0, -math.inf
        for k, t in enumerate(b):
            v = self._linear(t, x)
            if v > best_v:
                best, best_v = k, v
        return best

    def scores(self, x):
        """Per class, the summed alpha of the rounds voting for it."""
        self._check_row(x)
        votes = [0.0] * self.classes
        for alpha, kind, b in self.rounds:
            votes[self.base_predict(kind, b, x)] += alpha
        return votes

    def predict(self, x):
        return _argmax(self.scores(x))


def bin_of(x, lo, n):
    """dpboost.binOf: floor((x-lo)/(1-lo) * n), clamped to [0, n-1]; NaN to 0."""
    v = (x - lo) / (1 - lo) * float(n)
    if not (v >= 0):
        return 0
    if v >= float(n - 1):
        return n - 1
    return int(v)


class DPBoostModel(Model):
    """dpboost.Model: boosters of complete binary trees over a public binning."""

    def __init__(self, d):
        super().__init__(d)
        if d.get("version") != 1:
            raise ModelError("version %r, this reader reads 1" % d.get("version"))
        cfg = d["config"]
        self.method = cfg.get("method", "dpboost")
        self.task = cfg.get("task", "classification")
        self.depth = cfg["depth"]
        self.newton = self.method == "newton"
        self.kind = "prob" if self.newton else "score"
        self.bins, self.lo = list(d["bins"]), [float(v) for v in d["range_low"]]
        F = len(self.features)
        if len(self.bins) != F or len(self.lo) != F:
            raise ModelError("%d bin counts and %d ranges for %d features" % (len(self.bins), len(self.lo), F))
        for n, lo in zip(self.bins, self.lo):
            if not (2 <= n <= MAX_BINS) or lo not in (-1.0, 0.0):
                raise ModelError("a feature with %d bins over [%r, 1]" % (n, lo))
        # each tree: (feature, bin, leaf) lists, nodes in heap order
        self.boosters = [[(list(t["feature"]), list(t["bin"]), [float(v) for v in t["leaf"]]) for t in ts]
                         for ts in d["boosters"]]
        K, B = len(self.class_names), len(self.boosters)
        if self.task == "regression":
            if B != 1 or K != 0:
                raise ModelError("regression model with %d boosters and %d classes" % (B, K))
        elif self.task != "classification" or K < 2 or B != (1 if K == 2 else K):
            raise ModelError("%d boosters for %d classes (task %s)" % (B, K, self.task))
        internal = (1 << self.depth) - 1
        for ts in self.boosters:
            if len(ts) != cfg["trees"]:
                raise ModelError("a booster with %d trees, config %d" % (len(ts), cfg["trees"]))
            for feat, bins, leaf in ts:
                if len(feat) != internal or len(bins) != internal or len(leaf) != internal + 1:
                    raise ModelError("a tree whose shape does not match depth %d" % self.depth)
                for f, k in zip(feat, bins):
                    if not (0 <= f < F and 0 <= k < self.bins[f] - 1):
                        raise ModelError("feature %d bin %d out of range" % (f, k))
                if not all(math.isfinite(v) for v in leaf):
                    raise ModelError("a leaf that is not finite")

    def _tree_value(self, tree, x):
        feat, bins, leaf = tree
        n = 0
        while n < len(feat):
            f = feat[n]
            n = 2 * n + 1 if bin_of(x[f], self.lo[f], self.bins[f]) <= bins[n] else 2 * n + 2
        return leaf[n - len(feat)]

    def booster_scores(self, x):
        """Model.Scores: each booster's sum of its trees' leaves, in order."""
        self._check_row(x)
        out = []
        for ts in self.boosters:
            s = 0.0
            for t in ts:
                s += self._tree_value(t, x)
            out.append(s)
        return out

    def value(self, x):
        """Model.Value: a regression model's output (the first booster)."""
        return self.booster_scores(x)[0]

    def predict(self, x):
        """Model.Predict: one booster: class 1 iff F > 0; else the first
        booster with the largest score."""
        f = self.booster_scores(x)
        if len(f) == 1:
            return 1 if f[0] > 0 else 0
        return _argmax(f)

    def scores(self, x):
        """Per class: newton probabilities (sigmoid, softmax), or raw scores
        (-F, F for one booster; the one-vs-rest outputs otherwise)."""
        f = self.booster_scores(x)
        if len(f) == 1:
            if self.newton:
                p = _sigmoid(f[0])
                return [1 - p, p]
            return [-f[0], f[0]]
        if not self.newton:
            return f
        mx = max(f)
        e = [math.exp(v - mx) for v in f]
        z = 0.0
        for v in e:
            z += v
        return [v / z for v in e]


class PFDSModel(Model):
    """pfds.ModelFile: one PFDS agent's linear predictor. Version 1 (two
    classes): one vector "w", score = w.x + b, class 1 when the score is
    non-negative, scores [-F, F]. Version 2 (K > 2 classes): one vector per
    class in "weights", the class is the argmax of the K scores (ties to the
    smallest index), scores the K linear scores (Model.Class, Model.Scores)."""

    def __init__(self, d):
        super().__init__(d)
        version = d.get("version")
        if version == 1:
            if len(self.class_names) != 2:
                raise ModelError("version 1 with %d class names: it holds a two-class predictor" % len(self.class_names))
            if "weights" in d:
                raise ModelError('version 1 with "weights": it holds one vector in "w"')
            vecs = [d["w"]]
        elif version == 2:
            if len(self.class_names) < 3:
                raise ModelError("version 2 with %d class names: it holds three or more classes (two are version 1)" % len(self.class_names))
            if "w" in d:
                raise ModelError('version 2 with "w": it holds one vector per class in "weights"')
            vecs = d["weights"]
            if len(vecs) != len(self.class_names):
                raise ModelError("%d weight vectors for %d class names" % (len(vecs), len(self.class_names)))
        else:
            raise ModelError("version %r, this reader reads 1 and 2" % version)
        self.vectors = []
        for k, v in enumerate(vecs):
            v = [float(x) for x in v]
            if len(v) != len(self.features) + 1:
                raise ModelError("weight vector %d: %d weights for %d features and a bias" % (k, len(v), len(self.features)))
            for j, x in enumerate(v):
                if math.isnan(x) or math.isinf(x):
                    raise ModelError("weight %d of vector %d is %r" % (j, k, x))
            self.vectors.append(v)
        self.w = [x for v in self.vectors for x in v]  # every weight (the tests count non-zero ones)

    @staticmethod
    def _lin(w, x):
        s = w[-1]
        for j, v in enumerate(x):
            if v != 0:
                s += w[j] * v
        return s

    def _scores(self, x):
        self._check_row(x)
        return [self._lin(w, x) for w in self.vectors]

    def predict(self, x):
        f = self._scores(x)
        if len(f) == 1:
            return 1 if f[0] >= 0 else 0
        best = 0
        for k, v in enumerate(f):
            if v > f[best]:
                best = k
        return best

    def scores(self, x):
        f = self._scores(x)
        if len(f) == 1:
            return [-f[0], f[0]]
        return f


def load(path):
    """Reads a model file of any kind (SAMME, DP-GBDT, PFDS)."""
    with open(path, "rb") as fh:
        try:
            d = json.loads(fh.read().decode("utf-8"))
        except ValueError as e:
            raise ModelError("%s: %s" % (path, e))
    fmt = d.get("format") if isinstance(d, dict) else None
    try:
        if fmt == SAMME_FORMAT:
            return SammeModel(d)
        if fmt == DPBOOST_FORMAT:
            return DPBoostModel(d)
        if fmt == PFDS_FORMAT:
            return PFDSModel(d)
    except (KeyError, TypeError) as e:
        raise ModelError("%s: missing or malformed field %s" % (path, e))
    raise ModelError("%s: format %r, want %r, %r or %r" % (path, fmt, SAMME_FORMAT, DPBOOST_FORMAT, PFDS_FORMAT))


def load_schema(path):
    with open(path, encoding="utf-8") as f:
        return Schema(json.load(f))


def scores_csv(m, X):
    """The CSV ``ppboost predict --scores`` prints for rows X."""
    if not m.class_names:
        lines = [go_csv_line(["value"])]
        lines += [go_csv_line([go_format_float(m.value(x))]) for x in X]
        return "".join(lines)
    lines = [go_csv_line(["predicted"] + [m.kind + ":" + c for c in m.class_names])]
    for x in X:
        lines.append(go_csv_line([m.class_names[m.predict(x)]] + [go_format_float(v) for v in m.scores(x)]))
    return "".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Predict with a ppboost model file: prints the CSV of `ppboost predict --scores` "
                                 "(the predicted class, then prob:NAME or score:NAME per class; value for a regression model).")
    ap.add_argument("model", help="model file written by any ppboost trainer: sim, simulate, testnet, user, dpboost, fed, fed-user or pfds")
    ap.add_argument("data", help="CSV file in raw units (the model's schema scales it), or already scaled with --scaled")
    ap.add_argument("--missing", default="error", choices=MISSING_POLICIES, help="missing values, as ppboost predict --missing")
    ap.add_argument("--scaled", action="store_true", help="the rows are already scaled: one column per model feature, used as is")
    ap.add_argument("--schema", help="schema file for a model trained without one (ppboost found it beside the data)")
    ap.add_argument("--out", help="write the CSV to this file instead of stdout")
    a = ap.parse_args(argv)
    try:
        m = load(a.model)
        p = getattr(m, "partial", None)
        if p:
            print("warning: %s: partial model: %s of %s planned rounds (%s)" % (a.model, p.get("rounds"), p.get("planned"), p.get("reason")),
                  file=sys.stderr)
        if m.schema is not None and m.fill is None and not a.scaled and (
                a.missing == "mean" or (a.missing == "zero" and any(c["kind"] == "categorical" for c in m.schema.columns))):
            print("warning: %s: the model stores no training fill values (written by an older ppboost); --missing %s fills gaps "
                  "with this file's own means and most frequent categories, so a row's scores depend on the other rows in the file"
                  % (a.model, a.missing), file=sys.stderr)
        if a.scaled:
            X, _ = m.read_scaled_csv(a.data)
        else:
            X, _ = m.read_csv(a.data, a.missing, load_schema(a.schema) if a.schema else None)
        text = scores_csv(m, X)
    except (ValueError, OSError) as e:
        print("ppboost_model: %s" % e, file=sys.stderr)
        return 1
    if a.out:
        with open(a.out, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
