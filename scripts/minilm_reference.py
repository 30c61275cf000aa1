#!/usr/bin/env python3
"""Reference embeddings for examples/minilm: sentence-transformers (PyPI; reference only, never at run
time) embeds examples/minilm/reference/sentences.txt with all-MiniLM-L6-v2 from the same folder the
example reads (scripts/fetch_minilm.sh), into examples/minilm/reference/embeddings.npy ([n, 384]
float32, unit length: the model's own Pooling and Normalize modules).

    pip install sentence-transformers
    python3 scripts/minilm_reference.py [MODEL_DIR]

`minilm --file examples/minilm/reference/sentences.txt --expect examples/minilm/reference/embeddings.npy`
then compares (CI runs it: every cosine must be at least 0.99999).
"""
import os
import sys

import numpy as np
import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "models", "all-MiniLM-L6-v2")
ref = os.path.join(root, "examples", "minilm", "reference")
with open(os.path.join(ref, "sentences.txt"), encoding="utf-8") as f:
    sentences = [line.rstrip("\r\n") for line in f if line.rstrip("\r\n")]
model = SentenceTransformer(model_dir, device="cpu")
model.max_seq_length = 256  # the model's configured limit, as the example's
e = model.encode(sentences, batch_size=32, convert_to_numpy=True).astype(np.float32)
assert e.shape == (len(sentences), 384)
np.save(os.path.join(ref, "embeddings.npy"), e)
tok = model.tokenizer(sentences, truncation=True, max_length=256)["input_ids"]
lengths = [len(t) for t in tok]
print(f"{len(sentences)} sentences, {min(lengths)}..{max(lengths)} tokens, "
      f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}: wrote {ref}/embeddings.npy")
