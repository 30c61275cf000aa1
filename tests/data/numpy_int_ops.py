#!/usr/bin/env python3
"""Writes tests/data/numpy_int_ops.inc: NumPy's results for tenfold's integer ops, read by tests/ops_int_test.cpp.

    python3 tests/data/numpy_int_ops.py > tests/data/numpy_int_ops.inc

Every expected value in the table is NumPy's (warnings about division by zero and overflow silenced:
the values are what is compared). For each element type tenfold has (int32, int64, bool; float32 and
float64 for floor_divide and remainder), the operands are every pair of a list of edge values (0, ±1,
the type's min and max, ...) followed by random pairs drawn with a fixed seed, so the file is the same
on every run of the same NumPy version.
"""
import numpy as np

rng = np.random.default_rng(13)


def literal(x, dtype):
    """A C++ literal for one value of `dtype`, exactly."""
    if dtype == np.bool_:
        return "true" if x else "false"
    if np.issubdtype(dtype, np.integer):
        v = int(x)
        info = np.iinfo(dtype)
        if v == info.min:  # -2147483648 is not a literal in C++: minus applied to a too-large one
            return f"({info.min + 1} - 1)"
        return str(v) + ("ll" if dtype == np.int64 else "")
    v = float(x)
    bits = 32 if dtype == np.float32 else 64
    if np.isnan(v):
        return f"nan{bits}"
    if np.isinf(v):
        return f"inf{bits}" if v > 0 else f"-inf{bits}"
    return v.hex() + ("f" if dtype == np.float32 else "")


def array(name, values, dtype, ctype):
    items = [literal(x, dtype) for x in values]
    lines, line = [], "   "
    for it in items:
        if len(line) + len(it) + 2 > 118:
            lines.append(line)
            line = "   "
        line += " " + it + ","
    lines.append(line)
    return f"  static constexpr {ctype} {name}[n] = {{\n" + "\n".join(lines) + "\n  };"


def pairs(edges, dtype, random_pairs, draw):
    a = [x for x in edges for _ in edges]
    b = [y for _ in edges for y in edges]
    for _ in range(random_pairs):
        x, y = draw()
        a.append(x)
        b.append(y)
    return np.array(a, dtype), np.array(b, dtype)


def integer_table(dtype, ctype):
    info = np.iinfo(dtype)
    bits = info.bits
    edges = [0, 1, -1, 2, -2, 7, -7, 100, info.min, info.min + 1, info.max, info.max - 1]

    def draw():
        x = int(rng.integers(info.min, info.max, endpoint=True))
        y = int(rng.integers(-20, 21)) if rng.random() < 0.5 else int(rng.integers(info.min, info.max, endpoint=True))
        return x, y

    a, b = pairs(edges, dtype, 48, draw)
    n = len(a)
    counts = [-2, -1, 0, 1, 2, 7, bits - 2, bits - 1, bits, bits + 1, 2 * bits, 100]
    count = np.array([counts[i % len(counts)] if i < 144 else int(rng.integers(-4, bits + 4)) for i in range(n)], dtype)
    with np.errstate(all="ignore"):
        out = {
            "add": a + b,
            "sub": a - b,
            "mul": a * b,
            "neg": np.negative(a),
            "abs": np.abs(a),
            "square": np.square(a),
            "floor_divide": np.floor_divide(a, b),
            "remainder": np.remainder(a, b),
            "fmod": np.fmod(a, b),
            "bitwise_and": np.bitwise_and(a, b),
            "bitwise_or": np.bitwise_or(a, b),
            "bitwise_xor": np.bitwise_xor(a, b),
            "bitwise_not": np.invert(a),
            "left_shift": np.left_shift(a, count),
            "right_shift": np.right_shift(a, count),
        }
        total, product = np.sum(a), np.prod(a)  # int64 accumulators on Linux, wrapping around
    for k, v in out.items():
        assert v.dtype == dtype, (k, v.dtype)
    body = [array("a", a, dtype, ctype), array("b", b, dtype, ctype), array("count", count, dtype, ctype)]
    body += [array(k, v, dtype, ctype) for k, v in out.items()]
    body.append(f"  static constexpr std::int64_t sum = {literal(total, np.int64)}, prod = {literal(product, np.int64)};")
    return n, body


def bool_table():
    a, b = pairs([False, True], np.bool_, 0, None)
    out = {
        "bitwise_and": np.bitwise_and(a, b),
        "bitwise_or": np.bitwise_or(a, b),
        "bitwise_xor": np.bitwise_xor(a, b),
        "bitwise_not": np.invert(a),
    }
    body = [array("a", a, np.bool_, "bool"), array("b", b, np.bool_, "bool")]
    body += [array(k, v, np.bool_, "bool") for k, v in out.items()]
    # Shifts of bools: NumPy computes them in int8, tenfold in int32; the values are the same.
    body += [array(k, f(a, b).astype(np.int32), np.int32, "std::int32_t")
             for k, f in (("left_shift", np.left_shift), ("right_shift", np.right_shift))]
    return len(a), body


def floating_table(dtype, ctype):
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -7.0, 0.1, 1e30, -1e30, np.finfo(dtype).smallest_subnormal,
             np.inf, -np.inf, np.nan]

    def draw():
        return rng.uniform(-100, 100), rng.uniform(-10, 10)

    a, b = pairs(edges, dtype, 31, draw)
    with np.errstate(all="ignore"):
        out = {"floor_divide": np.floor_divide(a, b), "remainder": np.remainder(a, b)}
    body = [array("a", a, dtype, ctype), array("b", b, dtype, ctype)]
    body += [array(k, v, dtype, ctype) for k, v in out.items()]
    return len(a), body


print(f"// Generated by tests/data/numpy_int_ops.py with NumPy {np.__version__}: NumPy's results, never tenfold's.")
print("// Read by tests/ops_int_test.cpp, which defines numpy_table, inf32, nan32, inf64 and nan64 before including it.")
for ctype, make in (("std::int32_t", lambda: integer_table(np.int32, "std::int32_t")),
                    ("std::int64_t", lambda: integer_table(np.int64, "std::int64_t")),
                    ("bool", bool_table),
                    ("float", lambda: floating_table(np.float32, "float")),
                    ("double", lambda: floating_table(np.float64, "double"))):
    n, body = make()
    print(f"template <>\nstruct numpy_table<{ctype}> {{\n  static constexpr int n = {n};")
    print("\n".join(body))
    print("};")
