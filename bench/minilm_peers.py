#!/usr/bin/env python3
"""all-MiniLM-L6-v2 on the CPU in PyTorch and ONNX Runtime, the peers of bench/bench_minilm.cpp.

    pip install torch transformers onnxruntime onnx onnxscript
    python3 bench/minilm_peers.py [MODEL_DIR] [--threads 2]

Times the same work as bench_minilm: the model from token ids to unit-length sentence embeddings
(BERT, masked mean pooling, L2 normalisation), batch 1 x 16 tokens and 1 x 128 (latency) and 32 x 128
(throughput), every token real (mask 1). Each peer runs with `threads` intra-op threads; the ONNX model
is exported from the same PyTorch module (opset 17) into a temporary folder. Prints one line per peer and
size: median and minimum milliseconds over the repetitions, after warm-up; then the peer's peak resident
memory (ru_maxrss) after loading the model and after all the runs. `--peer pytorch` or `--peer onnxruntime`
runs one peer alone, so that its peak memory is its own (ONNX Runtime's process then loads no PyTorch: a
child process exports the model); the default runs both in this process.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("model", nargs="?", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                         "models", "all-MiniLM-L6-v2"))
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--peer", choices=["pytorch", "onnxruntime", "both"], default="both")
ap.add_argument("--export", metavar="PATH", help=argparse.SUPPRESS)  # internal: write the ONNX model and exit
args = ap.parse_args()

SIZES = [(1, 16, 200), (1, 128, 50), (32, 128, 5)]


def peak_rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def inputs(b, s):
    ids = ((np.arange(b * s) * 37) % 20000 + 1000).reshape(b, s).astype(np.int64)
    return ids, np.ones((b, s), dtype=np.int64)


def timed(run, reps):
    for _ in range(3):
        run()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t), min(t)


def torch_model():
    import torch
    from transformers import BertModel

    class Embedder(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, ids, mask):
            h = self.bert(input_ids=ids, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    return torch, Embedder(BertModel.from_pretrained(args.model, attn_implementation="sdpa")).eval()


def export_onnx(path):
    torch, model = torch_model()
    ids, mask = (torch.from_numpy(a) for a in inputs(1, 16))
    torch.onnx.export(model, (ids, mask), path, input_names=["ids", "mask"], output_names=["embeddings"],
                      dynamic_axes={"ids": {0: "b", 1: "s"}, "mask": {0: "b", 1: "s"}}, opset_version=17,
                      dynamo=False)


if args.export:
    export_onnx(args.export)
    sys.exit(0)

if args.peer in ("pytorch", "both"):
    torch, model = torch_model()
    loaded = peak_rss_kib()
    print(f"torch {torch.__version__}, {args.threads} threads")
    with torch.inference_mode():
        for b, s, reps in SIZES:
            ids, mask = (torch.from_numpy(a) for a in inputs(b, s))
            med, best = timed(lambda: model(ids, mask), reps)
            print(f"pytorch     B={b:<3d} S={s:<4d} median {med:9.2f} ms  min {best:9.2f} ms", flush=True)
    print(f"pytorch     peak RSS {peak_rss_kib()} KiB (after loading the model: {loaded} KiB)", flush=True)

if args.peer in ("onnxruntime", "both"):
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime: not installed (pip install onnxruntime)")
        sys.exit(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "minilm.onnx")
        if args.peer == "both":
            export_onnx(path)
        else:  # in a child, so that this process's memory is ONNX Runtime's alone
            subprocess.run([sys.executable, os.path.abspath(__file__), args.model, "--threads", str(args.threads),
                            "--export", path], check=True)
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        loaded = peak_rss_kib()
        print(f"onnxruntime {ort.__version__}, {args.threads} threads")
        for b, s, reps in SIZES:
            ids, mask = inputs(b, s)
            med, best = timed(lambda: sess.run(None, {"ids": ids, "mask": mask}), reps)
            print(f"onnxruntime B={b:<3d} S={s:<4d} median {med:9.2f} ms  min {best:9.2f} ms", flush=True)
        print(f"onnxruntime peak RSS {peak_rss_kib()} KiB (after loading the model: {loaded} KiB)", flush=True)
