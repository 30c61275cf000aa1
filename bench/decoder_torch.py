#!/usr/bin/env python3
"""The PyTorch peer of issue 16's decoder: a byte-level GPT trained on Debian's `fortunes` corpus.

    python3 bench/decoder_torch.py [--iters 2000] [--threads 2] [--seed 1] [--corpus DIR] [--json FILE]

Corpus: every fortune file of the `fortunes` package (/usr/share/games/fortunes, the files without an
extension, in name order; `ascii-art` left out: drawings, not text), the `%` lines that separate the
cookies replaced by an empty line; 2.4 MB of English prose, quotations and jokes, in the role nanoGPT
gives to Shakespeare (1.1 MB). Byte level: the vocabulary is the distinct bytes of the corpus. The first
90% is the training split, the rest the validation split (as nanoGPT splits Shakespeare).

Model and training: nanoGPT's CPU configuration for character-level Shakespeare (4 layers, 4 heads,
width 128, context 64, batch 12, 2000 iterations, no dropout, no biases), with the issue's choices:
pre-norm blocks with LayerNorm (weight only), rotary position embeddings on queries and keys (no position
table; dimension i pairs with i + D/2, as in GPT-NeoX and Llama), a GELU (tanh) MLP of width 512, the
output layer tied to the token embedding. AdamW (lr 1e-3,
betas 0.9/0.99, weight decay 0.1 on matrices only), 100 warm-up iterations then cosine decay to 1e-4,
gradients clipped at norm 1.0; initial weights N(0, 0.02), the blocks' output projections
N(0, 0.02 / sqrt(2 * layers)) (GPT-2's). Windows of 65 bytes drawn uniformly from the split.

Prints the loss every 250 iterations and, last, "final validation loss X after N iterations in S s"
(S: training time, evaluations excluded); the validation loss is the mean over 200 batches of 12
windows drawn with a fixed seed.
"""
import argparse
import json
import math
import os
import platform
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

LAYERS, HEADS, WIDTH, CONTEXT, BATCH = 4, 4, 128, 64, 12
LR, MIN_LR, WARMUP, WEIGHT_DECAY, CLIP = 1e-3, 1e-4, 100, 0.1, 1.0
EVAL_BATCHES = 200


def load_corpus(folder):
    names = sorted(n for n in os.listdir(folder) if "." not in n and n != "ascii-art" and
                   os.path.isfile(os.path.join(folder, n)))
    if not names:
        sys.exit(f"decoder_torch: no fortune files in {folder} (apt-get install fortunes)")
    text = bytearray()
    for n in names:
        with open(os.path.join(folder, n), "rb") as f:
            for line in f.read().split(b"\n"):
                text += (b"" if line == b"%" else line) + b"\n"
    return bytes(text), names


def rope(x, cos, sin):  # x [B, H, T, D]: pairs (i, i + D/2) rotated by position * 10000^(-2i/D) (GPT-NeoX, Llama)
    x0, x1 = x.chunk(2, dim=-1)
    return torch.cat((x0 * cos - x1 * sin, x1 * cos + x0 * sin), dim=-1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(WIDTH, bias=False)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH, bias=False)
        self.proj = nn.Linear(WIDTH, WIDTH, bias=False)
        self.ln2 = nn.LayerNorm(WIDTH, bias=False)
        self.up = nn.Linear(WIDTH, 4 * WIDTH, bias=False)
        self.down = nn.Linear(4 * WIDTH, WIDTH, bias=False)

    def forward(self, x, cos, sin):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(WIDTH, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(rope(q, cos, sin), rope(k, cos, sin), v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))


class Decoder(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.embed = nn.Embedding(vocab, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(WIDTH, bias=False)
        d = WIDTH // HEADS
        inv = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        angle = torch.arange(CONTEXT, dtype=torch.float64)[:, None] * inv[None, :]
        self.register_buffer("cos", angle.cos().float(), persistent=False)
        self.register_buffer("sin", angle.sin().float(), persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * LAYERS) if name.endswith(("proj.weight", "down.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, ids, targets):
        t = ids.shape[1]
        x = self.embed(ids)
        for blk in self.blocks:
            x = blk(x, self.cos[:t], self.sin[:t])
        logits = self.ln(x) @ self.embed.weight.t()  # tied output layer
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def windows(data, g):
    start = torch.randint(len(data) - CONTEXT - 1, (BATCH,), generator=g)
    w = torch.stack([data[s:s + CONTEXT + 1] for s in start.tolist()])
    return w[:, :-1], w[:, 1:]


def lr_at(it, iters):
    if it < WARMUP:
        return LR * (it + 1) / WARMUP
    r = (it - WARMUP) / max(1, iters - WARMUP)
    return MIN_LR + 0.5 * (1 + math.cos(math.pi * min(1.0, r))) * (LR - MIN_LR)


@torch.no_grad()
def validation_loss(model, data, seed):
    model.eval()
    g = torch.Generator().manual_seed(seed)
    loss = sum(model(*windows(data, g)).item() for _ in range(EVAL_BATCHES)) / EVAL_BATCHES
    model.train()
    return loss


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--corpus", default="/usr/share/games/fortunes")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    text, names = load_corpus(a.corpus)
    vocab = sorted(set(text))
    lookup = torch.zeros(256, dtype=torch.long)
    lookup[torch.tensor(vocab)] = torch.arange(len(vocab))
    data = lookup[torch.frombuffer(bytearray(text), dtype=torch.uint8).long()]
    split = int(0.9 * len(data))
    train, val = data[:split], data[split:]
    model = Decoder(len(vocab))
    decay = [q for q in model.parameters() if q.dim() >= 2]
    rest = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": rest, "weight_decay": 0.0}],
                            lr=LR, betas=(0.9, 0.99), eps=1e-8)
    params = sum(q.numel() for q in model.parameters())
    print(f"decoder_torch: torch {torch.__version__}, {a.threads} threads; {len(names)} fortune files, {len(text)} bytes, "
          f"vocabulary {len(vocab)}; {params} parameters; {a.iters} iterations of {BATCH} x {CONTEXT}", flush=True)
    g = torch.Generator().manual_seed(a.seed)
    train_s, curve = 0.0, []
    for it in range(a.iters):
        t0 = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = lr_at(it, a.iters)
        loss = model(*windows(train, g))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        train_s += time.perf_counter() - t0
        curve.append(loss.item())
        if (it + 1) % 250 == 0 or it + 1 == a.iters:
            print(f"iteration {it + 1}/{a.iters}: train loss {sum(curve[-50:]) / len(curve[-50:]):.4f} (last 50), "
                  f"{train_s:.1f} s", flush=True)
    val_loss = validation_loss(model, val, 12345)
    print(f"final validation loss {val_loss:.4f} after {a.iters} iterations in {train_s:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"framework": "pytorch", "torch_version": torch.__version__, "python": platform.python_version(),
                       "threads": a.threads, "iters": a.iters, "seed": a.seed, "corpus_bytes": len(text),
                       "vocab": len(vocab), "parameters": params, "train_seconds": train_s,
                       "validation_loss": val_loss, "train_loss_curve": curve, "command": " ".join(sys.argv)}, f)
            f.write("\n")


if __name__ == "__main__":
    main()
