#!/usr/bin/env python3
"""The peer of examples/fashion_mnist in PyTorch (CPU or GPU): the same CNN, data, optimizer and schedule.

    python3 bench/fashion_mnist_torch.py [--epochs N] [--steps N] [--model cnn|mlp] [--channels-last]
                                         [--threads N] [--timed-steps N] [--seed N] [--data DIR] [--json FILE]
                                         [--init FILE] [--device cpu|cuda]

Model (cnn.hpp): conv 3x3 pad 1 1->16 (no bias) -> BatchNorm -> ReLU -> maxpool 2 -> conv 16->32 (no bias)
-> BatchNorm -> ReLU -> maxpool 2 -> Linear(1568, 128) -> ReLU -> Dropout(0.25) -> Linear(128, 10),
cross-entropy. --model mlp: 784 -> 256 -> ReLU -> 10 with the same optimizer and schedule. Adam lr 2e-3,
batch 64, drop_last, reshuffled every epoch, lr per step = tenfold::optim::cosine_lr (warm-up of a
quarter epoch, then cosine to 0). --channels-last keeps the CNN's activations NHWC (tenfold's layout)
and flattens them in NHWC order, as the C++ example does. --device cuda trains on the GPU as
`fashion_mnist --device cuda` does: each batch gathered on the host and copied to the device.
Denormal floats are flushed to zero (torch.set_flush_denormal), as the C++ example does.

--init FILE (the CNN) starts from the C++ example's initial weights (`fashion_mnist --save-initial FILE`,
safetensors, its layouts converted) and takes the batches in its order (its Philox Fisher-Yates shuffle
with the key 2 * seed + 1, reproduced below), so that both runs see the same start and the same data
and differ only in the dropout masks and float rounding. Without it the weights come from
torch.manual_seed(seed) under the same rule (uniform in +-1/sqrt(fan_in)) and the order from torch.randperm.

Prints one line per epoch in the C++ example's format ("epoch E/N: train loss L, test accuracy A,
S s (I images/s)"; S counts the training steps only, the test pass is not in it), then the mean step
time over global steps 20..20+N (after warm-up), the max RSS before and after the first step, the
training seconds to reach test accuracy >= 0.92, and "final test accuracy A after N epochs in S s".

Needs numpy and torch (CPU). Where pip refuses to install into the system Python, use a venv:
    python3 -m venv /work/venv-torch
    /work/venv-torch/bin/pip install numpy torch --index-url https://download.pytorch.org/whl/cpu
    (or plain `pip install numpy torch` where that index cannot be reached)
and run it as /work/venv-torch/bin/python bench/fashion_mnist_torch.py (bench/run_training.sh reads $PYTHON).
"""
import argparse
import gzip
import json
import math
import os
import platform
import resource
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, EVAL_BATCH = 64, 100
PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530
TARGET_ACCURACY = 0.92


def read_idx(path):
    """An IDX file (gzip or not) as a numpy array of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype_code, rank = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    array = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank)
    if array.size != math.prod(dims):
        raise ValueError(f"{path}: {array.size} values for shape {dims}")
    return array.reshape(dims)


def load_split(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = (images.astype(np.float32) / 255.0 - PIXEL_MEAN) / PIXEL_STD
    x = torch.from_numpy(x).unsqueeze(1).contiguous()  # [N, 1, 28, 28]
    y = torch.from_numpy(labels.astype(np.int64))
    if int(y.min()) < 0 or int(y.max()) > 9:
        raise ValueError(f"{prefix}: labels outside 0..9")
    return x, y


class CNN(nn.Module):
    def __init__(self, nhwc_flatten):
        super().__init__()
        self.nhwc_flatten = nhwc_flatten
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16, eps=1e-5, momentum=0.1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32, eps=1e-5, momentum=0.1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.drop = nn.Dropout(0.25)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        # channels_last: [B, C, H, W] is stored as [B, H, W, C], so the NHWC flatten is a view, as in tenfold
        x = x.permute(0, 2, 3, 1).flatten(1) if self.nhwc_flatten else x.flatten(1)
        return self.fc2(self.drop(F.relu(self.fc1(x))))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF


def philox4x32(counters, seed):
    """tenfold::detail::philox_at(seed, 0, i) for every i in counters (uint64 array; stream 0): Philox4x32-10
    (Salmon et al., SC'11), as four uint32 arrays."""
    c = counters.astype(np.uint64)
    x = [c & MASK32, c >> np.uint64(32), np.zeros_like(c), np.zeros_like(c)]
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    for r in range(10):
        if r > 0:
            k0, k1 = (k0 + PHILOX_W0) & MASK32, (k1 + PHILOX_W1) & MASK32
        p1, p0 = np.uint64(PHILOX_M1) * x[2], np.uint64(PHILOX_M0) * x[0]
        x = [(p1 >> np.uint64(32)) ^ x[1] ^ np.uint64(k0), p1 & np.uint64(MASK32),
             (p0 >> np.uint64(32)) ^ x[3] ^ np.uint64(k1), p0 & np.uint64(MASK32)]
    return x


# Random123's known answer for philox4x32_R(10, ctr = 0, key = 0).
assert [int(v[0]) for v in philox4x32(np.zeros(1, np.uint64), 0)] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def tenfold_order(n, seed, epoch):
    """The permutation examples/fashion_mnist trains epoch `epoch` (1-based) in: Fisher-Yates, draw i the
    Philox counter (epoch - 1) * n + i under the key `seed` (its shuffle stream, 2 * seed + 1)."""
    first = (epoch - 1) * n
    x = philox4x32(np.arange(first, first + n, dtype=np.uint64), seed)
    draws = ((x[1] << np.uint64(32)) | x[0]).tolist()
    p = list(range(n))
    for i in range(n - 1, 0, -1):
        j = draws[i] % (i + 1)
        p[i], p[j] = p[j], p[i]
    return torch.tensor(p, dtype=torch.int64)


def read_safetensors(path):
    """The float32 tensors of a safetensors file as numpy arrays (the format: an 8-byte little-endian
    header length, a JSON header of dtype, shape and data offsets, then the data)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise ValueError(f"{path}: {name} is {t['dtype']}, not F32")
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data, dtype="<f4", count=(end - begin) // 4, offset=8 + n + begin).reshape(t["shape"])
    return out


def load_tenfold_initial(model, path, nhwc_flatten):
    """The C++ example's parameters (cnn.hpp: conv weights HWIO, linear weights [in, out], fc1's inputs
    in NHWC order) into the PyTorch CNN (OIHW, [out, in], fc1's inputs in NCHW order unless
    nhwc_flatten)."""
    t = read_safetensors(path)
    fc1 = t["fc1.weight"].T  # [128, 1568], inputs (h, w, c)
    if not nhwc_flatten:
        fc1 = fc1.reshape(128, 7, 7, 32).transpose(0, 3, 1, 2).reshape(128, 7 * 7 * 32)
    values = {
        "conv1.weight": t["conv1.weight"].transpose(3, 2, 0, 1), "conv2.weight": t["conv2.weight"].transpose(3, 2, 0, 1),
        "fc1.weight": fc1, "fc2.weight": t["fc2.weight"].T,
    }
    for name in ("bn1.weight", "bn1.bias", "bn2.weight", "bn2.bias", "fc1.bias", "fc2.bias",
                 "bn1.running_mean", "bn1.running_var", "bn2.running_mean", "bn2.running_var"):
        values[name] = t[name]
    state = model.state_dict()
    with torch.no_grad():
        for name, v in values.items():
            if tuple(state[name].shape) != v.shape:
                raise ValueError(f"{path}: {name} has shape {v.shape}, the model's is {tuple(state[name].shape)}")
            state[name].copy_(torch.from_numpy(np.array(v, dtype=np.float32)))


def cosine_lr(t, total, base, warmup=0, floor=0.0):
    """tenfold::optim::cosine_lr."""
    if t < warmup:
        return base * (t + 1) / warmup
    progress = (t - warmup) / (total - warmup) if total > warmup else 1.0
    return floor + (base - floor) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def max_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def test_accuracy(model, x_test, y_test, channels_last, device):
    model.eval()
    correct = 0
    with torch.inference_mode():
        for b in range(0, x_test.shape[0] // EVAL_BATCH * EVAL_BATCH, EVAL_BATCH):
            x = x_test[b:b + EVAL_BATCH].to(device)
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            correct += int((model(x).argmax(1) == y_test[b:b + EVAL_BATCH].to(device)).sum())
    model.train()
    return correct / x_test.shape[0]


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--steps", type=int, default=0, help="batches per epoch (0: all, 937)")
    p.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    p.add_argument("--channels-last", action="store_true", help="NHWC activations (CNN only)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--timed-steps", type=int, default=100, help="N of the step-time window 20..20+N")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--init", help="start from these weights and take the batches in the C++ example's order "
                                  "(fashion_mnist --save-initial FILE)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    a = p.parse_args()
    if a.epochs < 1 or a.steps < 0 or a.threads < 1 or a.timed_steps < 1:
        p.error("--epochs, --threads and --timed-steps must be at least 1, --steps at least 0")
    if a.channels_last and a.model != "cnn":
        p.error("--channels-last is for --model cnn")
    if a.init and a.model != "cnn":
        p.error("--init is for --model cnn")
    return a


def main():
    a = parse()
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)  # as examples/fashion_mnist (tenfold::cpu::flush_denormals)
    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    x_train, y_train = load_split(a.data, "train")
    x_test, y_test = load_split(a.data, "t10k")

    model = CNN(nhwc_flatten=a.channels_last) if a.model == "cnn" else MLP()
    if a.init:
        load_tenfold_initial(model, a.init, a.channels_last)
    device = torch.device(a.device)
    model = model.to(device)
    if a.channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    shuffle = torch.Generator().manual_seed(a.seed * 2 + 1)

    per_epoch = x_train.shape[0] // BATCH  # drop_last
    steps = min(a.steps, per_epoch) if a.steps > 0 else per_epoch
    total, warmup = steps * a.epochs, steps // 4
    timed_first, timed_last = 20, 20 + a.timed_steps  # global steps [20, 20+N)
    layout = " channels_last" if a.channels_last else ""
    where = torch.cuda.get_device_name() if a.device == "cuda" else f"{a.threads} threads, {cpu_model()}"
    start = f"; from {a.init} in the C++ example's batch order" if a.init else ""
    print(f"fashion_mnist_torch: {a.model}{layout}, torch {torch.__version__}, {where}; "
          f"{steps} steps of {BATCH} images per epoch, {a.epochs} epochs, Adam lr {a.lr:g} (cosine){start}", flush=True)

    step_times, epochs, reached = [], [], None
    rss_before_first = rss_after_first = None
    train_seconds = 0.0
    for epoch in range(1, a.epochs + 1):
        if a.init:
            order = tenfold_order(x_train.shape[0], a.seed * 2 + 1, epoch)
        else:
            order = torch.randperm(x_train.shape[0], generator=shuffle)
        e0 = time.perf_counter()
        loss_sum = 0.0
        for k in range(steps):
            s0 = time.perf_counter()
            index = order[k * BATCH:(k + 1) * BATCH]
            x, y = x_train[index].to(device), y_train[index].to(device)
            if a.channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            global_step = (epoch - 1) * steps + k
            for group in opt.param_groups:
                group["lr"] = cosine_lr(global_step, total, a.lr, warmup)
            if global_step == 0:
                rss_before_first = max_rss_mib()
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item()  # synchronises, as the C++ step returns its loss
            if global_step == 0:
                rss_after_first = max_rss_mib()
            step_times.append(time.perf_counter() - s0)
        secs = time.perf_counter() - e0
        train_seconds += secs
        accuracy = test_accuracy(model, x_test, y_test, a.channels_last, device)
        if reached is None and accuracy >= TARGET_ACCURACY:
            reached = train_seconds
        epochs.append({"epoch": epoch, "train_loss": loss_sum / steps, "test_accuracy": accuracy, "seconds": secs,
                       "images_per_second": steps * BATCH / secs})
        print(f"epoch {epoch}/{a.epochs}: train loss {loss_sum / steps:.4f}, test accuracy {accuracy:.4f}, "
              f"{secs:.1f} s ({steps * BATCH / secs:.0f} images/s)", flush=True)

    window = step_times[timed_first:timed_last]
    step_ms = 1e3 * sum(window) / len(window) if window else None
    if window:
        print(f"step time: mean {step_ms:.2f} ms over steps {timed_first}..{timed_first + len(window) - 1} "
              f"({BATCH * 1e3 / step_ms:.0f} images/s)")
    else:
        print(f"step time: not measured (only {len(step_times)} steps, the window starts at step {timed_first})")
    print(f"memory: max RSS {rss_before_first:.1f} MiB before the first step, {rss_after_first:.1f} MiB after "
          f"(+{rss_after_first - rss_before_first:.1f} MiB), {max_rss_mib():.1f} MiB at the end")
    print(f"time to test accuracy >= {TARGET_ACCURACY}: " +
          (f"{reached:.1f} s of training" if reached is not None else "not reached"))
    total_seconds = time.perf_counter() - t0
    print(f"final test accuracy {epochs[-1]['test_accuracy']:.4f} after {a.epochs} epochs in {total_seconds:.0f} s")

    if a.json:
        result = {
            "framework": "pytorch", "torch_version": torch.__version__, "python": platform.python_version(),
            "cpu": cpu_model(), "threads": a.threads, "model": a.model, "channels_last": a.channels_last,
            "batch": BATCH, "steps_per_epoch": steps, "epochs": epochs, "lr": a.lr, "seed": a.seed, "init": a.init,
            "step_ms": step_ms, "step_window": [timed_first, timed_first + len(window)] if window else None,
            "max_rss_mib": {"before_first_step": rss_before_first, "after_first_step": rss_after_first,
                            "first_step_growth": rss_after_first - rss_before_first, "end": max_rss_mib()},
            "target_accuracy": TARGET_ACCURACY, "seconds_to_target": reached,
            "final_test_accuracy": epochs[-1]["test_accuracy"], "total_seconds": total_seconds,
            "command": " ".join(sys.argv),
        }
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
