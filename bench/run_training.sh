#!/usr/bin/env bash
# Trains the Fashion-MNIST CNN with tenfold (examples/fashion_mnist) and with PyTorch on the CPU
# (bench/fashion_mnist_torch.py: the same model, data, optimizer and schedule) in one invocation on the
# same machine, then prints a Markdown table to stdout: per epoch seconds, images/s and test accuracy
# for both, PyTorch's epoch time over tenfold's, and the training seconds to test accuracy >= 0.92.
# PyTorch starts from tenfold's initial weights and takes the batches in its order (the example's
# --save-initial, the script's --init), so that the two runs differ only in the dropout masks and in
# float rounding, and the epoch at which each reaches 0.92 is not a draw of two different starts.
#
#   bench/run_training.sh [EPOCHS] [--steps N] [--seed N] [--own-start] [--channels-last] [--mlp]
#
#   EPOCHS            default 8
#   --steps N         batches per epoch (a quick run); passed to both
#   --seed N          the seed of the initial weights, the shuffles and the dropout masks (default 1)
#   --own-start       PyTorch draws its own initial weights and batch order (the same rule, its own streams)
#   --channels-last   PyTorch keeps the CNN's activations NHWC, tenfold's layout (default: NCHW)
#   --mlp             also times PyTorch on an MLP 784-256-10 (no tenfold counterpart; one line below the table)
#   THREADS           threads for both (TENFOLD_NUM_THREADS, torch.set_num_threads); default 2
#   BUILD_DIR         where build/examples/fashion_mnist is (default build); built if missing
#   PYTHON            the Python with torch and numpy (default python3; see fashion_mnist_torch.py for a venv)
#
# Progress goes to stderr, the table to stdout. Both runs see the same machine load, which the header
# shows: on a busy machine PyTorch's OpenMP threads spin at their barriers, and with 2 threads on 2
# busy cores its steps can be many times slower (OMP_WAIT_POLICY=PASSIVE helps there); run it idle.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
python=${PYTHON:-python3}
threads=${THREADS:-2}
epochs=8
steps_args=() torch_args=() mlp=0 seed=1 own_start=0
while (($#)); do
  case $1 in
    --steps) steps_args=(--steps "${2:?--steps needs a value}"); shift 2 ;;
    --seed) seed=${2:?--seed needs a value}; shift 2 ;;
    --own-start) own_start=1; shift ;;
    --channels-last) torch_args+=(--channels-last); shift ;;
    --mlp) mlp=1; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    [0-9]*) epochs=$1; shift ;;
    *) echo "run_training.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

binary=$build/examples/fashion_mnist
if [[ ! -x $binary ]]; then
  echo "run_training.sh: building $binary" >&2
  cmake --build "$build" --target fashion_mnist >&2
fi
"$python" -c 'import torch, numpy' 2>/dev/null || {
  echo "run_training.sh: $python has no torch or numpy (see bench/fashion_mnist_torch.py)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
load_before=$(uptime)

echo "== tenfold: $binary --epochs $epochs ${steps_args[*]} --seed $seed (TENFOLD_NUM_THREADS=$threads)" >&2
TENFOLD_NUM_THREADS=$threads /usr/bin/time -f '%M' -o "$work/tenfold_rss" \
  "$binary" --epochs "$epochs" "${steps_args[@]}" --seed "$seed" --save-initial "$work/initial.safetensors" \
  --out "$work/tenfold_out" | tee "$work/tenfold.txt" >&2

((own_start)) || torch_args+=(--init "$work/initial.safetensors")
echo "== PyTorch: $python bench/fashion_mnist_torch.py --epochs $epochs ${steps_args[*]} --seed $seed ${torch_args[*]} --threads $threads" >&2
"$python" "$root/bench/fashion_mnist_torch.py" --epochs "$epochs" "${steps_args[@]}" --seed "$seed" "${torch_args[@]}" \
  --threads "$threads" --json "$work/torch.json" | tee "$work/torch.txt" >&2

if ((mlp)); then
  echo "== PyTorch MLP: --model mlp --epochs $epochs ${steps_args[*]}" >&2
  "$python" "$root/bench/fashion_mnist_torch.py" --model mlp --epochs "$epochs" "${steps_args[@]}" \
    --threads "$threads" --json "$work/torch_mlp.json" | tee "$work/torch_mlp.txt" >&2
fi
load_after=$(uptime)

"$python" - "$work" "$epochs" "$threads" "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" \
  "$(git -C "$root" rev-parse --short HEAD)" "$load_before" "$load_after" "${steps_args[*]} ${torch_args[*]}" <<'EOF'
import json, os, re, sys

work, epochs, threads, cpu, commit, load_before, load_after, extra = sys.argv[1:]
target = 0.92
line = re.compile(r"epoch (\d+)/\d+: train loss ([\d.]+), test accuracy ([\d.]+), ([\d.]+) s \(([\d.]+) images/s\)")
tenfold = [dict(epoch=int(m[1]), train_loss=float(m[2]), test_accuracy=float(m[3]), seconds=float(m[4]),
                images_per_second=float(m[5])) for m in line.finditer(open(os.path.join(work, "tenfold.txt")).read())]
torch = json.load(open(os.path.join(work, "torch.json")))
if not tenfold:
    sys.exit("run_training.sh: no epoch lines in the tenfold output")

def to_target(rows):
    elapsed = 0.0
    for r in rows:
        elapsed += r["seconds"]
        if r["test_accuracy"] >= target:
            return f"{elapsed:.1f} s (epoch {r['epoch']})"
    return "not reached"

def mean(xs):
    return sum(xs) / len(xs)

try:
    tenfold_rss = int(open(os.path.join(work, "tenfold_rss")).read().split()[-1]) / 1024
except (OSError, ValueError, IndexError):
    tenfold_rss = None
steps = torch["steps_per_epoch"]
layout = "channels_last (NHWC)" if torch["channels_last"] else "NCHW"
print("## Fashion-MNIST training: tenfold vs PyTorch (CPU)\n")
print(f"- CPU: {cpu}; {threads} threads each (TENFOLD_NUM_THREADS, torch.set_num_threads)")
print(f"- tenfold commit {commit}, examples/fashion_mnist; PyTorch {torch['torch_version']} ({layout}), "
      f"Python {torch['python']}, bench/fashion_mnist_torch.py")
start = ("PyTorch from tenfold's initial weights in its batch order" if torch.get("init")
         else "each side its own initial weights and batch order")
print(f"- {epochs} epochs of {steps} steps x {torch['batch']} images, Adam lr {torch['lr']:g} with the cosine schedule, "
      f"seed {torch['seed']}, {start}{'; arguments: ' + extra.strip() if extra.strip() else ''}")
print(f"- Load: before `{load_before.strip()}`; after `{load_after.strip()}`")
print("- Epoch seconds count the training steps only (the test pass is not in them); ratio = PyTorch / tenfold "
      "epoch time, > 1 means tenfold is faster\n")
print("| epoch | tenfold s | tenfold img/s | tenfold acc | PyTorch s | PyTorch img/s | PyTorch acc | ratio |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for t, p in zip(tenfold, torch["epochs"]):
    print(f"| {t['epoch']} | {t['seconds']:.1f} | {t['images_per_second']:.0f} | {t['test_accuracy']:.4f} | "
          f"{p['seconds']:.1f} | {p['images_per_second']:.0f} | {p['test_accuracy']:.4f} | {p['seconds'] / t['seconds']:.2f} |")
t_mean, p_mean = mean([r["seconds"] for r in tenfold]), mean([r["seconds"] for r in torch["epochs"]])
print(f"| mean | {t_mean:.1f} | {mean([r['images_per_second'] for r in tenfold]):.0f} | | {p_mean:.1f} | "
      f"{mean([r['images_per_second'] for r in torch['epochs']]):.0f} | | {p_mean / t_mean:.2f} |")
print()
print(f"- Time to test accuracy >= {target} (training seconds): tenfold {to_target(tenfold)}; PyTorch {to_target(torch['epochs'])}")
print(f"- Final test accuracy: tenfold {tenfold[-1]['test_accuracy']:.4f}; PyTorch {torch['final_test_accuracy']:.4f}")
if torch["step_ms"] is not None:
    a, b = torch["step_window"]
    print(f"- PyTorch mean step time over steps {a}..{b - 1}: {torch['step_ms']:.2f} ms")
arena = re.search(r"training step: arena ([\d.]+) MB", open(os.path.join(work, "tenfold.txt")).read())
if arena:
    print(f"- tenfold's training step: its arena, planned at compile time, {arena[1]} MB (every activation, activation "
          "gradient and temporary of the step; parameters, gradients and Adam's moments apart)")
rss = torch["max_rss_mib"]
print(f"- Max RSS: tenfold {f'{tenfold_rss:.0f} MiB' if tenfold_rss is not None else 'not measured'} (whole process); "
      f"PyTorch {rss['end']:.0f} MiB (whole process, torch's libraries included), of which the first step added "
      f"{rss['first_step_growth']:.1f} MiB")
mlp_path = os.path.join(work, "torch_mlp.json")
if os.path.exists(mlp_path):
    m = json.load(open(mlp_path))
    print(f"- PyTorch MLP 784-256-10 (no tenfold counterpart): mean epoch {mean([r['seconds'] for r in m['epochs']]):.1f} s, "
          f"{mean([r['images_per_second'] for r in m['epochs']]):.0f} img/s, final accuracy {m['final_test_accuracy']:.4f}")
EOF
