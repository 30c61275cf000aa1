#!/usr/bin/env python3
"""PyTorch DistributedDataParallel (gloo, CPU) on the Fashion-MNIST CNN: the DDP peer of
`mpirun -np R build/examples/fashion_mnist` (issue 19's benchmark).

    python3 bench/fashion_mnist_ddp.py [--ranks 2] [--threads 1] [--epochs 1] [--steps N] [--data DIR]

The model, data, optimizer and schedule of bench/fashion_mnist_torch.py (imported from it), NHWC
activations as tenfold keeps them. The global batch of 64 is split as tenfold splits it: every rank
draws the same permutation and takes its rows of each batch (64 / R; the first 64 % R ranks one more).
Gradients are averaged by DDP (bucketed allreduce overlapped with the backward pass); each rank's loss
is its rows' mean, so the average over ranks is the global batch's loss when R divides 64. Batch norm
normalises each rank's rows by themselves: PyTorch's SyncBatchNorm runs on GPUs only, so this peer is
plain DDP (tenfold synchronises the statistics: a little more communication, the one-process model).
Each rank runs `--threads` intra-op threads. Rank 0 prints the C++ example's epoch line.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist_torch as peer  # noqa: E402


def rows_of(rank, ranks, batch):
    base, extra = divmod(batch, ranks)
    first = rank * base + min(rank, extra)
    return first, first + base + (1 if rank < extra else 0)


def run(rank, a, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)  # as examples/fashion_mnist (tenfold::cpu::flush_denormals)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    torch.manual_seed(a.seed)
    x_train, y_train = peer.load_split(a.data, "train")
    x_test, y_test = peer.load_split(a.data, "t10k")
    model = peer.CNN(nhwc_flatten=True).to(memory_format=torch.channels_last)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    shuffle = torch.Generator().manual_seed(a.seed * 2 + 1)
    per_epoch = x_train.shape[0] // peer.BATCH
    steps = min(a.steps, per_epoch) if a.steps > 0 else per_epoch
    total, warmup = steps * a.epochs, steps // 4
    lo, hi = rows_of(rank, a.ranks, peer.BATCH)
    if rank == 0:
        print(f"fashion_mnist_ddp: torch {torch.__version__}, gloo, {a.ranks} ranks x {a.threads} threads, "
              f"{peer.cpu_model()}; {steps} steps of {peer.BATCH} images per epoch, {a.epochs} epochs", flush=True)
    for epoch in range(1, a.epochs + 1):
        order = torch.randperm(x_train.shape[0], generator=shuffle)
        dist.barrier()
        e0 = time.perf_counter()
        loss_sum = 0.0
        for k in range(steps):
            index = order[k * peer.BATCH + lo:k * peer.BATCH + hi]
            x = x_train[index].contiguous(memory_format=torch.channels_last)
            for group in opt.param_groups:
                group["lr"] = peer.cosine_lr((epoch - 1) * steps + k, total, a.lr, warmup)
            loss = F.cross_entropy(ddp(x), y_train[index])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
        dist.barrier()
        secs = time.perf_counter() - e0
        if rank == 0:
            accuracy = peer.test_accuracy(model, x_test, y_test, True, torch.device("cpu"))
            print(f"epoch {epoch}/{a.epochs}: train loss {loss_sum / steps:.4f}, test accuracy {accuracy:.4f}, "
                  f"{secs:.1f} s ({steps * peer.BATCH / secs:.0f} images/s)", flush=True)
        dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--steps", type=int, default=0, help="batches per epoch (0: all, 937)")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--port", type=int, default=29517)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = p.parse_args()
    if not 1 <= a.ranks <= peer.BATCH or a.threads < 1 or a.epochs < 1 or a.steps < 0:
        p.error("--ranks 1..64, --threads and --epochs at least 1, --steps at least 0")
    mp.spawn(run, args=(a, a.port), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
