#!/usr/bin/env python3
"""Writes the reference files of tests/safetensors_test.cpp and tests/npy_test.cpp into tests/data/io/.

    python3 tests/data/make_io_reference.py     # needs numpy only (Debian: python3-numpy)

The .npy files come from NumPy itself (np.save, and np.lib.format.write_array for format 2.0 and
3.0). The safetensors file is written by hand with json and struct: the format is an 8-byte
little-endian header length, a JSON header, then the raw little-endian data. NumPy has no bfloat16,
so its bits are the top halves of float32 values that bfloat16 holds exactly.

To check the safetensors file with the real `safetensors` package (pip install safetensors), which
this script also does when it is importable:

    from safetensors import safe_open   # validates the whole header on opening
    with safe_open("tests/data/io/reference.safetensors", framework="numpy") as f:
        f.metadata(), [f.get_tensor(k) for k in f.keys() if k != "bf16"]   # NumPy has no bfloat16
    # with PyTorch: from safetensors.torch import load_file; load_file(...)["bf16"] is bfloat16

The generated files are committed; rerunning this script must reproduce them byte for byte.
"""
import json
import os
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "io")

# The arrays the C++ tests expect (they spell the same values out).
ARRAYS = {
    "f32": np.array([[1.5, -2.25, 3.0], [0.0, 1e-3, -7.0]], dtype="<f4"),
    "f64": np.array([0.1, -1e300, 2.5], dtype="<f8"),
    "i32": np.array([[-2147483648, 7], [70000, -1]], dtype="<i4"),
    "i64": np.array([-9223372036854775808, 9007199254740993], dtype="<i8"),
    "bool": np.array([True, False, True], dtype="|b1"),
    "f16": np.array([1.5, -65504.0], dtype="<f2"),
    "u8": np.array([0, 128, 255], dtype="|u1"),
}
BF16_VALUES = [1.0, -2.5, 0.15625, 3.0e38]  # all exact in bfloat16 except 3.0e38, rounded below
BF16_BITS = [
    (struct.unpack("<I", struct.pack("<f", v))[0] + 0x7FFF + ((struct.unpack("<I", struct.pack("<f", v))[0] >> 16) & 1)) >> 16
    for v in BF16_VALUES
]
METADATA = {"format": "pt", "source": "tests/data/make_io_reference.py"}


def write_safetensors(path):
    dtypes = {"f32": "F32", "f64": "F64", "i32": "I32", "i64": "I64", "bool": "BOOL", "f16": "F16", "u8": "U8"}
    blobs = {name: ARRAYS[name].tobytes() for name in dtypes}
    blobs["bf16"] = struct.pack("<4H", *BF16_BITS)
    header = {"__metadata__": METADATA}
    data = b""
    # Data in name order, each tensor's offsets relative to the data buffer.
    for name in sorted(blobs):
        shape = [len(BF16_BITS)] if name == "bf16" else list(ARRAYS[name].shape)
        dtype = "BF16" if name == "bf16" else dtypes[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blobs[name])]}
        data += blobs[name]
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the reference writer pads
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    os.makedirs(OUT, exist_ok=True)
    st = os.path.join(OUT, "reference.safetensors")
    write_safetensors(st)
    for name, a in ARRAYS.items():
        np.save(os.path.join(OUT, name + ".npy"), a)
    np.save(os.path.join(OUT, "scalar.npy"), np.array(42.5, dtype="<f8"))
    for version in [(2, 0), (3, 0)]:
        with open(os.path.join(OUT, "f32_v%d.npy" % version[0]), "wb") as f:
            np.lib.format.write_array(f, ARRAYS["f32"], version=version)
    # Files the reader must refuse (as NumPy itself reads them fine).
    np.save(os.path.join(OUT, "fortran.npy"), np.asfortranarray(ARRAYS["f32"]))
    np.save(os.path.join(OUT, "big_endian.npy"), ARRAYS["f32"].astype(">f4"))

    for name, a in ARRAYS.items():  # the files read back as written
        assert np.array_equal(np.load(os.path.join(OUT, name + ".npy")), a)
    try:
        from safetensors import safe_open
    except ImportError:
        print("safetensors is not installed: the .safetensors file was not checked against it")
    else:
        with safe_open(st, framework="numpy") as f:
            assert f.metadata() == METADATA and sorted(f.keys()) == sorted(list(ARRAYS) + ["bf16"])
            for name, a in ARRAYS.items():
                t = f.get_tensor(name)
                assert t.dtype == a.dtype and np.array_equal(t, a), name
        print("checked reference.safetensors with the safetensors package")
    print("wrote", sorted(os.listdir(OUT)), "in", OUT)


if __name__ == "__main__":
    main()
