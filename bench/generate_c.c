/* The plain-C peer of examples/generate (issue 16): the byte-level GPT of examples/decoder decoded one
 * token at a time with a KV cache, single-threaded, in the style of a minimal C inference loop (plain
 * loops, no SIMD intrinsics, no BLAS; the compiler vectorises what it can at -O3 -march=native).
 *
 *   cc -O3 -march=native -o generate_c bench/generate_c.c -lm
 *   generate_c WEIGHTS PROMPT_IDS TOKENS RUNS
 *
 * WEIGHTS: the checkpoint's tensors as raw float32 in examples/decoder's order (bench/generate_torch.py
 * --export writes it): embed [V, 128], then per layer ln1 [128], qkv [128, 384], proj [128, 128], ln2 [128],
 * up [128, 512], down [512, 128] (each [in, out]: y = x w), then ln_f [128]; V from the file's size.
 * PROMPT_IDS: comma-separated token ids. Greedy decoding: each run prefills the prompt one position at a
 * time, then decodes TOKENS tokens (the prompt plus TOKENS must fit the context of 64). Prints the ids of
 * the first run and "decode: N tokens in S s (X tokens/s)" over all runs, and the prefill's rate. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { LAYERS = 4, HEADS = 4, WIDTH = 128, HD = WIDTH / HEADS, CONTEXT = 64, HIDDEN = 4 * WIDTH };

typedef struct {
  float *ln1, *qkv, *proj, *ln2, *up, *down;
} block;
typedef struct {
  int vocab;
  float* embed;
  block b[LAYERS];
  float* ln_f;
} model;

static float kc[LAYERS][HEADS][CONTEXT][HD], vc[LAYERS][HEADS][CONTEXT][HD];
static float cos_t[CONTEXT][HD / 2], sin_t[CONTEXT][HD / 2];

static void layer_norm(float* out, const float* x, const float* g) {
  float mean = 0, var = 0;
  for (int i = 0; i < WIDTH; ++i) mean += x[i];
  mean /= WIDTH;
  for (int i = 0; i < WIDTH; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= WIDTH;
  const float r = 1.0f / sqrtf(var + 1e-5f);
  for (int i = 0; i < WIDTH; ++i) out[i] = (x[i] - mean) * r * g[i];
}
/* y[out] = x[in] w[in, out] */
static void matvec(float* y, const float* x, const float* w, int in, int out) {
  memset(y, 0, sizeof(float) * (size_t)out);
  for (int i = 0; i < in; ++i) {
    const float xi = x[i];
    const float* row = w + (size_t)i * (size_t)out;
    for (int j = 0; j < out; ++j) y[j] += xi * row[j];
  }
}
static void rope(float* x, int pos) { /* pairs (i, i + HD/2) */
  for (int i = 0; i < HD / 2; ++i) {
    const float a = x[i], b = x[i + HD / 2], c = cos_t[pos][i], s = sin_t[pos][i];
    x[i] = a * c - b * s;
    x[i + HD / 2] = b * c + a * s;
  }
}

/* One position: token at pos; the logits of the next token into logits. */
static void forward(const model* m, int token, int pos, float* logits) {
  static float x[WIDTH], xn[WIDTH], qkv[3 * WIDTH], y[WIDTH], t[WIDTH], a[HIDDEN], att[CONTEXT];
  memcpy(x, m->embed + (size_t)token * WIDTH, sizeof x);
  for (int l = 0; l < LAYERS; ++l) {
    const block* b = &m->b[l];
    layer_norm(xn, x, b->ln1);
    matvec(qkv, xn, b->qkv, WIDTH, 3 * WIDTH);
    for (int h = 0; h < HEADS; ++h) {
      float* q = qkv + h * HD;
      float* k = qkv + WIDTH + h * HD;
      const float* v = qkv + 2 * WIDTH + h * HD;
      rope(q, pos);
      rope(k, pos);
      memcpy(kc[l][h][pos], k, sizeof(float) * HD);
      memcpy(vc[l][h][pos], v, sizeof(float) * HD);
      float mx = -INFINITY, z = 0;
      for (int j = 0; j <= pos; ++j) {
        float s = 0;
        for (int d = 0; d < HD; ++d) s += q[d] * kc[l][h][j][d];
        att[j] = s / sqrtf((float)HD);
        if (att[j] > mx) mx = att[j];
      }
      for (int j = 0; j <= pos; ++j) z += att[j] = expf(att[j] - mx);
      float* o = y + h * HD;
      for (int d = 0; d < HD; ++d) o[d] = 0;
      for (int j = 0; j <= pos; ++j)
        for (int d = 0; d < HD; ++d) o[d] += att[j] / z * vc[l][h][j][d];
    }
    matvec(t, y, b->proj, WIDTH, WIDTH);
    for (int i = 0; i < WIDTH; ++i) x[i] += t[i];
    layer_norm(xn, x, b->ln2);
    matvec(a, xn, b->up, WIDTH, HIDDEN);
    for (int i = 0; i < HIDDEN; ++i) {
      const float u = a[i];
      a[i] = 0.5f * u * (1.0f + tanhf(0.7978845608f * (u + 0.044715f * u * u * u)));
    }
    matvec(t, a, b->down, HIDDEN, WIDTH);
    for (int i = 0; i < WIDTH; ++i) x[i] += t[i];
  }
  layer_norm(xn, x, m->ln_f);
  for (int v = 0; v < m->vocab; ++v) { /* the output layer tied to the embedding */
    const float* e = m->embed + (size_t)v * WIDTH;
    float s = 0;
    for (int i = 0; i < WIDTH; ++i) s += xn[i] * e[i];
    logits[v] = s;
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: generate_c WEIGHTS PROMPT_IDS TOKENS RUNS\n");
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  if (!f) {
    fprintf(stderr, "generate_c: cannot open %s\n", argv[1]);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  const long bytes = ftell(f);
  fseek(f, 0, SEEK_SET);
  const long per_layer = 2L * WIDTH + WIDTH * 3L * WIDTH + (long)WIDTH * WIDTH + 2L * WIDTH * HIDDEN;
  const long floats = bytes / 4, rest = floats - LAYERS * per_layer - WIDTH;
  if (bytes % 4 || rest <= 0 || rest % WIDTH) {
    fprintf(stderr, "generate_c: %s holds %ld bytes, not a decoder's weights\n", argv[1], bytes);
    return 1;
  }
  float* w = malloc((size_t)bytes);
  if (!w || fread(w, 4, (size_t)floats, f) != (size_t)floats) {
    fprintf(stderr, "generate_c: cannot read %s\n", argv[1]);
    return 1;
  }
  fclose(f);
  model m;
  m.vocab = (int)(rest / WIDTH);
  float* p = w;
  m.embed = p, p += (size_t)m.vocab * WIDTH;
  for (int l = 0; l < LAYERS; ++l) {
    block* b = &m.b[l];
    b->ln1 = p, p += WIDTH;
    b->qkv = p, p += WIDTH * 3 * WIDTH;
    b->proj = p, p += WIDTH * WIDTH;
    b->ln2 = p, p += WIDTH;
    b->up = p, p += WIDTH * HIDDEN;
    b->down = p, p += HIDDEN * WIDTH;
  }
  m.ln_f = p;
  for (int t = 0; t < CONTEXT; ++t)
    for (int i = 0; i < HD / 2; ++i) {
      const double theta = t * pow(10000.0, -2.0 * i / HD);
      cos_t[t][i] = (float)cos(theta), sin_t[t][i] = (float)sin(theta);
    }
  int prompt[CONTEXT], np = 0;
  for (char* s = strtok(argv[2], ","); s && np < CONTEXT; s = strtok(NULL, ",")) prompt[np++] = atoi(s);
  const int tokens = atoi(argv[3]), runs = atoi(argv[4]);
  if (np < 1 || tokens < 1 || np + tokens > CONTEXT || runs < 1) {
    fprintf(stderr, "generate_c: the prompt (%d) and the tokens (%d) must fit %d positions\n", np, tokens, CONTEXT);
    return 2;
  }
  float* logits = malloc(sizeof(float) * (size_t)m.vocab);
  double prefill_s = 0, decode_s = 0;
  for (int r = 0; r < runs; ++r) {
    double t0 = now();
    for (int i = 0; i < np; ++i) forward(&m, prompt[i], i, logits);
    prefill_s += now() - t0;
    t0 = now();
    for (int i = 0; i < tokens; ++i) {
      int best = 0;
      for (int v = 1; v < m.vocab; ++v)
        if (logits[v] > logits[best]) best = v;
      if (r == 0) printf("%d%s", best, i + 1 < tokens ? "," : "\n");
      forward(&m, best, np + i, logits);
    }
    decode_s += now() - t0;
  }
  printf("prefill: %d tokens in %.6f s (%.0f tokens/s)\n", np * runs, prefill_s, np * runs / prefill_s);
  printf("decode: %d tokens in %.6f s (%.0f tokens/s)\n", tokens * runs, decode_s, tokens * runs / decode_s);
  free(logits);
  free(w);
  return 0;
}
