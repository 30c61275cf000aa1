"""The gradient step of bench_mlp_step.cpp in PyTorch (CPU): a perceptron 784 -> 256 -> 10 with ReLU and
cross-entropy at batch 128, the loss and the four parameter gradients (forward and backward, gradients
set to None between steps, no optimizer). Prints the median of 5 repetitions of the mean step time in
microseconds, as `mlp_step/pytorch <us>`.
    python bench/mlp_step_torch.py [--threads 2]
"""
import argparse
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=2)
args = parser.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(5)
B, In, H, C = 128, 784, 256, 10
x = torch.rand(B, In)
labels = torch.tensor([(i * 7 + 3) % C for i in range(B)])
w1 = (torch.randn(In, H) * 0.05).requires_grad_()
b1 = (torch.randn(H) * 0.01).requires_grad_()
w2 = (torch.randn(H, C) * 0.06).requires_grad_()
b2 = (torch.randn(C) * 0.01).requires_grad_()
params = [w1, b1, w2, b2]


def step():
    for p in params:
        p.grad = None
    loss = torch.nn.functional.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, labels)
    loss.backward()
    return loss


for _ in range(50):
    step()
times = []
for _ in range(5):
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < 0.5:
        step()
        n += 1
    times.append((time.perf_counter() - start) / n * 1e6)
times.sort()
print(f"mlp_step/pytorch {times[2]:.1f}")
