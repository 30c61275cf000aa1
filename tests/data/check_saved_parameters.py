#!/usr/bin/env python3
"""io:pytorch_reads: PyTorch's `safetensors` must load what tenfold::io::save_parameters writes, equal.

    TENFOLD_PARAMETERS_OUT=/tmp/p.safetensors build/tests/parameters_test "[.write_for_python]"
    python3 tests/data/check_saved_parameters.py /tmp/p.safetensors

The expected values are the model of tests/parameters_test.cpp filled with seed 3 (`fill`), spelled
out again here. Exit status 77 (ctest: skipped) when torch or safetensors is not importable
(pip install torch safetensors); 1 on any difference.
"""
import sys

try:
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file
except ImportError as e:
    print(f"skipped: {e} (pip install torch safetensors)")
    sys.exit(77)

path = sys.argv[1]
seed = 3.0
want = {
    "stem": torch.tensor([seed + 0.5 * k for k in range(6)], dtype=torch.bfloat16).reshape(2, 3),
    "steps": torch.tensor([int(seed) * 1000003, -7], dtype=torch.int64),
}
for i in range(2):
    want[f"blocks.{i}.weight"] = torch.tensor([seed * 0.25 + k + 100 * i for k in range(12)],
                                              dtype=torch.float32).reshape(3, 4)
    want[f"blocks.{i}.bias"] = torch.tensor([-seed - (k + 10 * i) for k in range(4)], dtype=torch.float32)

got = load_file(path)
with safe_open(path, framework="pt") as f:
    metadata = f.metadata()
bad = []
if sorted(got) != sorted(want):
    bad.append(f"names {sorted(got)} != {sorted(want)}")
for name, t in want.items():
    g = got.get(name)
    if g is None:
        continue
    if g.dtype != t.dtype or g.shape != t.shape or not torch.equal(g, t):
        bad.append(f"{name}: {g.dtype} {tuple(g.shape)} {g.flatten().tolist()} != {t.dtype} {tuple(t.shape)} {t.flatten().tolist()}")
if metadata != {"writer": "tenfold parameters_test"}:
    bad.append(f"metadata {metadata}")
for b in bad:
    print(b)
print(f"{path}: {len(want)} tensors, {'equal' if not bad else 'DIFFERENT'} (torch {torch.__version__})")
sys.exit(1 if bad else 0)
