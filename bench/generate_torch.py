#!/usr/bin/env python3
"""The PyTorch peer of examples/generate (issue 16): the same checkpoint decoded greedily in eager mode
with a static KV cache (preallocated [1, heads, 64, head_dim] per layer, written in place), the protocol
of bench/bench_generate.cpp and bench/generate_c.c.

    python3 bench/generate_torch.py CHECKPOINT PROMPT_IDS TOKENS RUNS [--threads 2] [--device cpu|cuda]
                                    [--export FILE] [--ids TEXT]

Each run prefills the prompt in one pass (causal scaled_dot_product_attention, keys and values written
into the cache), then decodes TOKENS tokens (argmax, then one position through the model). Prints the ids
of the first run and the prefill's and the decode's rates over all runs. --export writes the weights as
raw float32 in examples/decoder's order, for bench/generate_c.c. --device cuda runs the model, the cache and
the argmax on the GPU (each token's id still comes back to the host, as in `generate --device cuda`). The model is bench/decoder_torch.py's
(the checkpoint's matrices are [in, out]: y = x w, so nn.Linear takes their transposes).
"""
import argparse
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decoder_torch import CONTEXT, HEADS, LAYERS, WIDTH, Decoder, rope  # noqa: E402

ORDER = ["ln1", "qkv", "proj", "ln2", "up", "down"]


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            sys.exit(f"generate_torch: {path}: {name} is {info['dtype']}, not F32")
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], dtype="<f4").reshape(info["shape"]).copy()
    return out


def names():
    yield "embed.weight"
    for l in range(LAYERS):
        for part in ORDER:
            yield f"blocks.{l}.{part}.weight"
    yield "ln_f.weight"


class Cached:
    """The decoder's weights with a static KV cache, run one position (or a prompt) at a time."""

    def __init__(self, w, device):
        vocab = w["embed.weight"].shape[0]
        self.m = Decoder(vocab).eval()
        with torch.no_grad():
            self.m.embed.weight.copy_(torch.from_numpy(w["embed.weight"]))
            self.m.ln.weight.copy_(torch.from_numpy(w["ln_f.weight"]))
            for l, blk in enumerate(self.m.blocks):
                for part in ORDER:
                    t = torch.from_numpy(w[f"blocks.{l}.{part}.weight"])
                    getattr(blk, part).weight.copy_(t if part.startswith("ln") else t.t())
        self.m.to(device)
        d = WIDTH // HEADS
        self.k = [torch.zeros(1, HEADS, CONTEXT, d, device=device) for _ in range(LAYERS)]
        self.v = [torch.zeros(1, HEADS, CONTEXT, d, device=device) for _ in range(LAYERS)]

    @torch.no_grad()
    def run(self, ids, pos):
        """Positions [pos, pos + len(ids)) given the cache of [0, pos); the last position's logits."""
        m, t = self.m, ids.shape[1]
        x = m.embed(ids)
        cos, sin = m.cos[pos:pos + t], m.sin[pos:pos + t]
        for l, blk in enumerate(m.blocks):
            q, k, v = blk.qkv(blk.ln1(x)).split(WIDTH, dim=2)
            q, k, v = (z.view(1, t, HEADS, WIDTH // HEADS).transpose(1, 2) for z in (q, k, v))
            self.k[l][:, :, pos:pos + t] = rope(k, cos, sin)
            self.v[l][:, :, pos:pos + t] = v
            keys, values = self.k[l][:, :, :pos + t], self.v[l][:, :, :pos + t]
            y = F.scaled_dot_product_attention(rope(q, cos, sin), keys, values, is_causal=t > 1)
            x = x + blk.proj(y.transpose(1, 2).reshape(1, t, WIDTH))
            x = x + blk.down(F.gelu(blk.up(blk.ln2(x)), approximate="tanh"))
        return (m.ln(x[:, -1]) @ m.embed.weight.t())[0]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint")
    p.add_argument("prompt_ids")
    p.add_argument("tokens", type=int)
    p.add_argument("runs", type=int)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--export", help="write the weights as raw float32 for bench/generate_c.c, then stop")
    p.add_argument("--ids", help="print this text's token ids (the checkpoint's vocabulary), then stop")
    a = p.parse_args()
    if a.ids is not None:
        with open(a.checkpoint, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            vocab = bytes.fromhex(json.loads(f.read(n))["__metadata__"]["vocabulary"])
        print(",".join(str(vocab.index(b)) for b in a.ids.encode()))
        return
    w = read_safetensors(a.checkpoint)
    if a.export:
        with open(a.export, "wb") as f:
            for n in names():
                f.write(np.ascontiguousarray(w[n], dtype="<f4").tobytes())
        return
    torch.set_num_threads(a.threads)
    prompt = [int(s) for s in a.prompt_ids.split(",")]
    if len(prompt) + a.tokens > CONTEXT:
        sys.exit(f"generate_torch: the prompt ({len(prompt)}) and the tokens ({a.tokens}) must fit {CONTEXT} positions")
    dev = torch.device(a.device)
    model = Cached(w, dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    prefill_s = decode_s = 0.0
    for r in range(a.runs):
        t0 = time.perf_counter()
        logits = model.run(torch.tensor([prompt], device=dev), 0)
        sync()
        prefill_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        out = []
        for i in range(a.tokens):
            best = int(torch.argmax(logits))
            out.append(best)
            logits = model.run(torch.tensor([[best]], device=dev), len(prompt) + i)
        sync()
        decode_s += time.perf_counter() - t0
        if r == 0:
            print(",".join(map(str, out)))
    print(f"prefill: {len(prompt) * a.runs} tokens in {prefill_s:.6f} s ({len(prompt) * a.runs / prefill_s:.0f} tokens/s)")
    print(f"decode: {a.tokens * a.runs} tokens in {decode_s:.6f} s ({a.tokens * a.runs / decode_s:.0f} tokens/s)")


if __name__ == "__main__":
    main()
