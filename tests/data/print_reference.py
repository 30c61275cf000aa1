#!/usr/bin/env python3
"""Prints what NumPy's str() gives for the arrays of tests/basics_test.cpp's printing cases.

The expected strings in tests/basics_test.cpp were pasted from this script's output (NumPy 2.4;
the large-value cutoff for scientific notation depends on the dtype since NumPy 2.2). Each case
builds the same values as its C++ twin. bf16 has no NumPy dtype: its case uses values whose
shortest digits are the same in bf16 and float32, and prints them as float32.
"""
import numpy as np

f32, f64, f16 = np.float32, np.float64, np.float16
cases = {
    "mixed float32": np.array([[1, 2.5, -3], [0.125, 100, 7]], f32),
    "integral float32": np.array([1, 2, 3], f32),
    "scientific float64": np.array([1e-5, 1.5, 1000], f64),
    "float32 large-value cutoff": np.array([1e6, 1], f32),
    "rounded to 8 digits": np.array([1 / 3, 2 / 3, 0.1 + 0.2, -0.0], f64),
    "nan and inf": np.array([np.nan, -np.inf, 1.5, 0], f64),
    "int32": np.array([[3, -40, 5], [600, 7, -8]], np.int32),
    "int64": np.array([-(2**62), 1, 2**40], np.int64),
    "bool": np.array([[True, False], [False, True]]),
    "float16": np.array([0.1, 1.5, -2, 0.01563], f16),
    "float16 scientific": np.array([1000, 1], f16),
    "bf16 (as float32)": np.array([[0.5, -1.25], [3, 96]], f32),
    "rank 3": np.arange(12, dtype=f32).reshape(2, 2, 3) / 4,
    "wrapped row": np.arange(30, dtype=f64) * 1.5,
    "summarised float32 [40,30]": np.arange(1200, dtype=f32).reshape(40, 30) / 8,
    "summarised int32 [3,20,20]": np.arange(1200, dtype=np.int32).reshape(3, 20, 20) - 600,
    "0-d float32 1": np.array(1, f32),
    "0-d float64 1e-5": np.array(1e-5, f64),
    "0-d bool": np.array(True),
    "0-d int32": np.array(-7, np.int32),
    "empty [2,0]": np.zeros((2, 0), f32),
    "expression: mixed float32 + 1": np.array([[1, 2.5, -3], [0.125, 100, 7]], f32) + f32(1),
}
for name, a in cases.items():
    print(f"// {name}\nR\"({a})\"\n")
