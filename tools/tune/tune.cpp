// tenfold_tune: searches the CPU GEMM's configurations (cpu/gemm_config.hpp) on the machine it runs on
// and writes the fastest per shape class into include/tenfold/tuned/gemm_cpu.hpp, which the kernels
// consult at compile time; the elementwise evaluator's streaming threshold (elementwise.hpp) and its row
// kernels' prefetch (rows.hpp), both in include/tenfold/tuned/elementwise_cpu.hpp; the attention's tiles (attention.hpp,
// include/tenfold/tuned/attention_cpu.hpp); the convolutions' lowering and blocking (conv.hpp,
// include/tenfold/tuned/conv_cpu.hpp); and softmax's pass structure, two-pass or online, by row length
// (softmax.hpp, include/tenfold/tuned/softmax_cpu.hpp).
//
//   tenfold_tune                      # search, print the table
//   tenfold_tune --write FILE         # ... and put this machine's entries into FILE (others are kept)
//   tenfold_tune --write-elementwise FILE  # ... and the elementwise evaluator's entry into FILE
//                                     #     (include/tenfold/tuned/elementwise_cpu.hpp: elementwise.hpp)
//   tenfold_tune --write-attention FILE    # ... and the attention's entry (tuned/attention_cpu.hpp)
//   tenfold_tune --write-conv FILE         # ... and the convolutions' entry (tuned/conv_cpu.hpp)
//   tenfold_tune --write-softmax FILE      # ... and softmax's entry (tuned/softmax_cpu.hpp)
//   tenfold_tune --quick              # one shape per class, one round, one run: a smoke run (CI)
//   tenfold_tune --runs N             # every search N times (default 3): an entry leaves the defaults
//                                     #     where most runs took it; thresholds are the runs' median
//   tenfold_tune --no-gemm            # the other searches alone (not with --write)
//
// For each shape class, a coordinate descent from the defaults: each parameter in turn is swept with the
// others held, the fastest value kept (two rounds). A candidate is timed on every shape of the class
// (the benchmark shapes and the examples' layers) through the same schedule and kernels as a program's
// matmul (schedule_gemm, gemm_split, gemm_range), scored by the geometric mean of its time over the
// defaults', and rejected if any element of any product is off the double-precision reference by more
// than the bound of a K-term float sum, or if it is more than 5% slower than the defaults on any shape of
// the class (a mean over the class once let a large gain on one shape hide a 2x loss on three others:
// bench/RESULTS.md, the Intel model 167 kind). The winner must then beat the defaults in a final
// alternated comparison by at least 5% (keep_threshold) over the class and lose no more than 5% on any of
// its shapes, else the class keeps the defaults.
#include <tenfold/tenfold.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "agree.hpp"
#include "common.hpp"
#include "attention.hpp"
#include "conv.hpp"
#include "elementwise.hpp"
#include "rows.hpp"
#include "rows_streaming.hpp"
#include "softmax.hpp"

namespace {
using namespace tenfold;
using cpu::gemm_config, cpu::gemm_shape_class, cpu::gemm_split_axis, tenfold::machine_key;
using tune::aligned_vector, tune::clock_type;

struct gemm_shape {
  index_t M, N, K;
};

// The shapes each class is tuned on: the GEMM benchmark's, and the examples' layers (transformer block:
// 128 tokens x 256; MiniLM: 128 x 384, FFN 1536; the decoder: 768 tokens x 128, FFN 512; the decode step).
std::vector<gemm_shape> shapes_of(gemm_shape_class c, bool quick) {
  switch (c) {
    case gemm_shape_class::few_rows:
      if (quick) return {{4, 1024, 1024}};
      return {{1, 4096, 4096}, {4, 4096, 4096}, {8, 4096, 4096}, {16, 4096, 4096}, {16, 1536, 384}};
    case gemm_shape_class::small:
      if (quick) return {{64, 96, 128}};
      return {{64, 128, 256}, {96, 96, 200}, {128, 64, 128}, {32, 512, 128}};
    case gemm_shape_class::medium:
      if (quick) return {{128, 256, 256}};
      return {{256, 256, 256}, {128, 768, 256}, {128, 256, 1024}, {128, 1536, 384}, {128, 384, 1536}, {768, 512, 128}, {768, 128, 512}};
    case gemm_shape_class::large:
      if (quick) return {{512, 512, 512}};
      return {{512, 512, 512}, {1024, 1024, 1024}, {512, 2048, 1024}};
  }
  return {};
}

// One product's operands, its double-precision reference and the bound each element must meet.
struct problem {
  gemm_shape s;
  aligned_vector<float> a, b, c;
  std::vector<double> ref, tol;
  explicit problem(gemm_shape sh) : s(sh), a(std::size_t(sh.M * sh.K)), b(std::size_t(sh.K * sh.N)), c(std::size_t(sh.M * sh.N)) {
    std::uint64_t x = std::uint64_t(sh.M * 1000003 + sh.N * 1009 + sh.K);
    auto next = [&x] {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      return -1.0f + 2.0f * float(x >> 40) * 0x1p-24f;
    };
    for (auto& v : a) v = next();
    for (auto& v : b) v = next();
    ref.assign(c.size(), 0.0);
    std::vector<double> mag(c.size(), 0.0);
    for (index_t i = 0; i < sh.M; ++i)
      for (index_t k = 0; k < sh.K; ++k) {
        const double av = a[std::size_t(i * sh.K + k)];
        double* r = &ref[std::size_t(i * sh.N)];
        double* m = &mag[std::size_t(i * sh.N)];
        const float* br = &b[std::size_t(k * sh.N)];
        for (index_t j = 0; j < sh.N; ++j) r[j] += av * br[j], m[j] += std::abs(av * br[j]);
      }
    tol.resize(mag.size());
    for (std::size_t i = 0; i < mag.size(); ++i) tol[i] = 4.0 * double(sh.K) * 0x1p-24 * mag[i] + 1e-30;
  }
  // C = A B as a program's matmul runs it, with this configuration.
  void run(const gemm_config& cfg) {
    const cpu::matrix_ref<float> ar{a.data(), s.K, 1}, br{b.data(), s.N, 1};
    const bool resident = s.M <= cpu::gemm_in_place_rows<float> && double(s.K) * double(s.N) * 4.0 >= 65536.0;
    const cpu::gemm_schedule sched = cpu::schedule_gemm(s.M, s.N, s.K, 1, resident, cfg);
    cpu::run_gemm_tasks(sched, 1, [&](index_t t0, index_t t1) {
      for (index_t t = t0; t < t1; ++t) {
        const cpu::gemm_part part = cpu::gemm_split<float>(s.M, s.N, t, sched.parts, cfg.split);
        cpu::gemm_range<float>(ar, br, s.M, s.K, part, cpu::gemm_direct_out<float>{c.data(), s.N}, cfg);
      }
    });
  }
  bool correct(const gemm_config& cfg) {
    std::fill(c.begin(), c.end(), std::nanf(""));
    run(cfg);
    for (std::size_t i = 0; i < c.size(); ++i)
      if (!(std::abs(double(c[i]) - ref[i]) <= tol[i])) return false;
    return true;
  }
  // Seconds per product: the best of three runs of enough products to take `min_s` each.
  double seconds(const gemm_config& cfg, double min_s) {
    return tune::seconds_per_call([&] { run(cfg); }, min_s);
  }
};

std::string describe(const gemm_config& c) {
  static const char* const axes[] = {"automatic", "rows", "columns"};
  std::ostringstream o;
  o << "{.kc = " << c.kc << ", .mc_panels = " << c.mc_panels << ", .nc_panels = " << c.nc_panels << ", .kc_in_place = " << c.kc_in_place
    << ", .parts_per_thread = " << c.parts_per_thread << ", .split = gemm_split_axis::" << axes[int(c.split)];
  if (c.in_place_rows != gemm_config{}.in_place_rows) o << ", .in_place_rows = " << c.in_place_rows;
  if (c.kc_crowded != gemm_config{}.kc_crowded) o << ", .kc_crowded = " << c.kc_crowded;
  o << "}";
  return o.str();
}

using tune::describe; // (the row kernels' prefetch: rows.hpp)
std::string describe(const cpu::attention_config& c) {
  std::ostringstream o;
  o << "{.row_panels = " << c.row_panels << ", .key_panels = " << c.key_panels << "}";
  return o.str();
}

std::string describe(const cpu::conv_config& c) {
  std::ostringstream o;
  o << "{.read_in_place = " << (c.read_in_place ? "true" : "false") << ", .turn_nchw = " << (c.turn_nchw ? "true" : "false")
    << ", .blocking = " << describe(c.blocking) << "}";
  return o.str();
}

// One parameter of the search: its name, its candidate values, and where it lives in a configuration.
struct parameter {
  const char* name;
  std::vector<index_t> values;
  std::function<index_t&(gemm_config&)> field;
};
std::vector<parameter> parameters(gemm_shape_class c, bool quick) {
  std::vector<parameter> p;
  const bool few = c == gemm_shape_class::few_rows;
  if (!few) {
    p.push_back({"kc", quick ? std::vector<index_t>{128, 256} : std::vector<index_t>{64, 128, 192, 256, 384, 512}, [](gemm_config& g) -> index_t& { return g.kc; }});
    p.push_back({"mc_panels", quick ? std::vector<index_t>{8, 24} : std::vector<index_t>{4, 8, 12, 16, 24, 32, 48}, [](gemm_config& g) -> index_t& { return g.mc_panels; }});
  }
  p.push_back({"nc_panels", quick ? std::vector<index_t>{16, 32} : std::vector<index_t>{8, 16, 24, 32, 48, 64}, [](gemm_config& g) -> index_t& { return g.nc_panels; }});
  if (few) p.push_back({"kc_in_place", {8, 16, 32, 64, 128}, [](gemm_config& g) -> index_t& { return g.kc_in_place; }});
  if (few) p.push_back({"kc_crowded", {8, 16, 32}, [](gemm_config& g) -> index_t& { return g.kc_crowded; }});
  if (few) p.push_back({"in_place_rows", {1, 4, 8, 16}, [](gemm_config& g) -> index_t& { return g.in_place_rows; }});
  if (!quick) p.push_back({"parts_per_thread", {1, 2, 3, 4}, [](gemm_config& g) -> index_t& { return g.parts_per_thread; }});
  return p;
}

struct class_result {
  gemm_shape_class shape;
  gemm_config best;   // what the table gets: the search's winner, or the defaults
  gemm_config found;  // the search's winner
  double speedup = 1; // defaults' time over the winner's (geometric mean over the class's shapes)
  double worst = 1;   // ... and on the class's shape where the winner does worst
  int tried = 0, rejected = 0;
};

class_result tune_class(gemm_shape_class cls, bool quick, double min_s) {
  std::vector<problem> probs;
  for (const gemm_shape& s : shapes_of(cls, quick)) probs.emplace_back(s);
  class_result r{cls, gemm_config{}, gemm_config{}};
  std::vector<double> base(probs.size());
  for (std::size_t i = 0; i < probs.size(); ++i) {
    if (!probs[i].correct(gemm_config{})) throw std::runtime_error("the default configuration is wrong on this machine: run the tests");
    base[i] = probs[i].seconds(gemm_config{}, min_s);
  }
  auto score = [&](const gemm_config& cfg) {
    ++r.tried;
    return tune::score_candidate(
        base, [&](std::size_t i) { return probs[i].correct(cfg); }, [&](std::size_t i) { return probs[i].seconds(cfg, min_s); }, r.rejected);
  };
  gemm_config best{};
  double best_score = 1.0;
  auto try_config = [&](const gemm_config& cfg) {
    if (cfg == best) return;
    const double sc = score(cfg);
    if (sc < best_score) best_score = sc, best = cfg;
  };
  for (int round = 0; round < (quick ? 1 : 2); ++round) {
    for (parameter& p : parameters(cls, quick))
      for (index_t v : p.values) {
        gemm_config cfg = best;
        p.field(cfg) = v;
        try_config(cfg);
      }
    for (gemm_split_axis axis : {gemm_split_axis::automatic, gemm_split_axis::rows, gemm_split_axis::columns}) {
      gemm_config cfg = best;
      cfg.split = axis;
      try_config(cfg);
    }
  }
  // The winner's fields that do not pay go back to the defaults' values, one at a time: a field is reset
  // where the winner with it reset scores within prune_tolerance of the winner. A search's winner carries
  // whatever its descent passed through (on Zen 5 two searches' few-rows winners differed from the
  // defaults in four fields and in two, sharing one: bench/RESULTS.md); pruned, the entry names what pays.
  if (!quick) {
    constexpr double prune_tolerance = 1.02;
    auto prune = [&](auto&& field) {
      gemm_config cfg = best, defaults{};
      if (field(cfg) == field(defaults)) return;
      field(cfg) = field(defaults);
      const double sc = score(cfg);
      if (sc <= best_score * prune_tolerance) best = cfg, best_score = std::min(sc, best_score);
    };
    for (parameter& p : parameters(cls, quick)) prune(p.field);
    prune([](gemm_config& g) -> gemm_split_axis& { return g.split; });
  }
  // The winner against the defaults once more, alternated (tune::confirm_winner).
  if (!(best == gemm_config{})) {
    const tune::confirmation c = tune::confirm_winner(
        probs.size(), quick ? 1 : 5, [&](std::size_t i) { return probs[i].seconds(gemm_config{}, min_s); },
        [&](std::size_t i) { return probs[i].seconds(best, min_s); });
    r.found = best, r.speedup = c.speedup, r.worst = c.worst;
    if (c.kept) r.best = best;
  }
  return r;
}

// The machine as the kernels' table keys it, read at run time: L1d and L2 of cpu0 (sysfs) and the cores.
index_t cache_kib(int level, const char* type) {
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream fl(dir + "level"), ft(dir + "type"), fs(dir + "size");
    int l = 0;
    std::string t, s;
    if (!(fl >> l) || !(ft >> t) || !(fs >> s)) continue;
    if (l != level || t != type || s.empty()) continue;
    const index_t n = std::stol(s);
    return s.back() == 'M' ? n * 1024 : n;
  }
  return 0;
}
std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, name, family, model;
  while (std::getline(f, line)) {
    auto value = [&] { return line.substr(line.find(':') + 2); };
    if (name.empty() && line.rfind("model name", 0) == 0) name = value();
    else if (family.empty() && line.rfind("cpu family", 0) == 0) family = value();
    else if (model.empty() && line.rfind("model\t", 0) == 0) model = value();
  }
  return name + " (family " + family + " model " + model + ")";
}

// The machine's key as the tables spell it.
std::string machine_text(const machine_key& m) {
  std::ostringstream o;
  o << "{\"" << m.isa << "\", " << m.l1d_kib << ", " << m.l2_kib << ", " << m.cores << "}";
  return o.str();
}

std::string entry_line(const machine_key& m, const class_result& r, const std::string& note) {
  std::ostringstream o;
  o << "    {" << machine_text(m) << ", gemm_shape_class::" << cpu::name_of(r.shape) << ", " << describe(r.best)
    << "}, // " << note;
  return o.str();
}

// A generated table's text around its entries: the comment, includes and using-declarations before the
// array, the entry type and the array's name.
struct table_format {
  std::string preamble, entry_type, name;
};
const table_format gemm_table{
    "// Generated by tools/tune (tenfold_tune --write): the fastest GEMM configuration per machine and shape\n"
    "// class, measured on that machine (cpu/gemm_config.hpp says what the fields do). Running the tool on a\n"
    "// machine replaces that machine's entries and keeps the others. Not edited by hand.\n"
    "#include <array>\n\n"
    "#include \"tenfold/cpu/gemm_config.hpp\"\n\n"
    "namespace tenfold::tuned {\n"
    "using cpu::gemm_config, cpu::gemm_shape_class, cpu::gemm_split_axis, cpu::gemm_tuned_entry;\n",
    "gemm_tuned_entry", "gemm_cpu"};
const table_format elementwise_table{
    "// Generated by tools/tune (tenfold_tune --write-elementwise): the elementwise evaluator's streaming-store\n"
    "// threshold and its row kernels' prefetch per machine, measured on that machine\n"
    "// (cpu/elementwise_config.hpp says what they do).\n"
    "// Running the tool on a machine replaces that machine's entry and keeps the others. Not edited by hand.\n"
    "#include <array>\n\n"
    "#include \"tenfold/cpu/elementwise_config.hpp\"\n\n"
    "namespace tenfold::tuned {\n"
    "using cpu::elementwise_config, cpu::elementwise_tuned_entry;\n",
    "elementwise_tuned_entry", "elementwise_cpu"};

const table_format attention_table{
    "// Generated by tools/tune (tenfold_tune --write-attention): the CPU attention's tiles per machine,\n"
    "// measured on that machine (cpu/attention_config.hpp says what the fields do). Running the tool on a\n"
    "// machine replaces that machine's entry and keeps the others. Not edited by hand.\n"
    "#include <array>\n\n"
    "#include \"tenfold/cpu/attention_config.hpp\"\n\n"
    "namespace tenfold::tuned {\n"
    "using cpu::attention_config, cpu::attention_tuned_entry;\n",
    "attention_tuned_entry", "attention_cpu"};

const table_format softmax_table{
    "// Generated by tools/tune (tenfold_tune --write-softmax): the row length from which softmax takes its\n"
    "// online form, per machine, measured on that machine (ops/softmax_config.hpp says what it does).\n"
    "// Running the tool on a machine replaces that machine's entry and keeps the others. Not edited by hand.\n"
    "#include <array>\n\n"
    "#include \"tenfold/ops/softmax_config.hpp\"\n\n"
    "namespace tenfold::tuned {\n",
    "softmax_tuned_entry", "softmax_cpu"};

const table_format conv_table{
    "// Generated by tools/tune (tenfold_tune --write-conv): the CPU convolutions' lowering and blocking per\n"
    "// machine, measured on that machine (cpu/conv_config.hpp says what the fields do). Running the tool on a\n"
    "// machine replaces that machine's entry and keeps the others. Not edited by hand.\n"
    "#include <array>\n\n"
    "#include \"tenfold/cpu/conv_config.hpp\"\n\n"
    "namespace tenfold::tuned {\n"
    "using cpu::conv_config, cpu::gemm_config, cpu::gemm_split_axis, cpu::conv_tuned_entry;\n",
    "conv_tuned_entry", "conv_cpu"};

// Puts `lines` (this machine's entries) into the generated header at `path`, keeping other machines'.
void write_table(const std::string& path, const machine_key& m, const std::vector<std::string>& lines,
                 const table_format& f) {
  std::vector<std::string> kept;
  {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot read the table to update");
    const std::string key = "{" + machine_text(m);
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
      if (line.find("// entries:begin") != std::string::npos) inside = true;
      else if (line.find("// entries:end") != std::string::npos) inside = false;
      else if (inside && line.find("    {{\"") == 0 && line.find(key) == std::string::npos) kept.push_back(line);
    }
  }
  kept.insert(kept.end(), lines.begin(), lines.end());
  std::ofstream out(path);
  out << "#pragma once\n"
      << f.preamble << "inline constexpr std::array<" << f.entry_type << ", " << kept.size() << "> " << f.name
      << "{{\n    // entries:begin\n";
  for (const auto& l : kept) out << l << "\n";
  out << "    // entries:end\n}};\n} // namespace tenfold::tuned\n";
  if (!out) throw std::runtime_error(path + ": cannot write");
}

// A search's outcome, printed: what it tried, the winner, and each measurement's ratio where it left the
// defaults.
template <class Config>
void report(const char* what, const tune::search_result<Config>& r, clock_type::time_point t0) {
  std::printf("%-9s %3d tried, %d rejected, %5.1f s: best %s, %.3fx the defaults (worst shape %.3fx): %s\n", what, r.tried, r.rejected,
              std::chrono::duration<double>(clock_type::now() - t0).count(), describe(r.found).c_str(), r.speedup, r.worst,
              r.taken() ? "taken" : r.off_defaults() ? "below the threshold, defaults kept" : "the defaults are the fastest");
  if (r.off_defaults()) std::printf("          by shape: %s\n", r.per_shape.c_str());
}
// This machine's one entry of a search's table, with what was measured as its comment.
template <class Config>
void write_entry(const std::string& path, const machine_key& m, const std::string& measured_on, const Config& best,
                 const std::string& note, const table_format& f, const char* what) {
  std::ostringstream l;
  l << "    {" << machine_text(m) << ", " << describe(best) << "}, // " << measured_on << ": " << note;
  write_table(path, m, {l.str()}, f);
  std::printf("wrote %s (1 %s entry for this machine)\n", path.c_str(), what);
}

// One search's verdict as a table's comment says it.
template <class R>
std::string verdict_note(const R& r) {
  std::ostringstream o;
  o << std::fixed;
  o.precision(3);
  if (!(r.best == decltype(r.best){})) o << r.speedup << "x the defaults";
  else if (!(r.found == decltype(r.found){}))
    o << "defaults kept (best found " << describe(r.found) << ": " << r.speedup << "x, worst shape " << r.worst << "x)";
  else o << "the defaults are the fastest";
  return o.str();
}

// Several runs of every search (--runs): an entry leaves the defaults only where more than half of the
// runs took the same configuration, and a threshold is the runs' median. On a shared guest one search's
// winner is often its minute's noise (bench/RESULTS.md: on Zen 5 six single searches in twenty minutes
// wrote six different tables); what most runs agree on is what a table can reproduce. One run: that
// run's verdict, as before.
template <class Config>
struct agreed {
  Config best{};
  std::string note;
};
template <class R>
auto agree(const std::vector<R>& runs) {
  using Config = decltype(runs[0].best);
  if (runs.size() == 1) return agreed<Config>{runs[0].best, verdict_note(runs[0])};
  const Config defaults{};
  std::vector<Config> taken;
  for (const R& r : runs) taken.push_back(r.best);
  const auto [best, votes] = tune::majority(taken, defaults);
  const auto took = std::size_t(std::count_if(taken.begin(), taken.end(), [&](const Config& c) { return !(c == defaults); }));
  std::ostringstream o;
  o << std::fixed;
  o.precision(3);
  if (votes) o << "taken by " << votes << " of " << runs.size() << " searches";
  else if (took) o << "defaults kept: no entry taken by more than half of " << runs.size() << " searches";
  else o << "defaults kept by " << runs.size() << " of " << runs.size() << " searches";
  o << " (each search's best over the defaults: ";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    o << (i ? ", " : "");
    if (!(runs[i].best == defaults) && !(runs[i].best == best)) o << describe(runs[i].best) << " ";
    o << runs[i].speedup << "x" << (runs[i].best == defaults ? "" : " taken");
  }
  o << ")";
  return agreed<Config>{best, o.str()};
}

// The runs' thresholds' median (tune::median_threshold), each run's value written into `seen`.
index_t median_threshold(const std::vector<index_t>& v, index_t never, std::string& seen, index_t unit, const char* unit_name) {
  for (std::size_t i = 0; i < v.size(); ++i)
    seen += (i ? ", " : "") + (v[i] == never ? std::string("never") : std::to_string(v[i] / unit) + unit_name);
  return index_t(tune::median_threshold(std::vector<std::int64_t>(v.begin(), v.end()), never));
}
} // namespace

int main(int argc, char** argv) {
  bool quick = false, gemm = true;
  int runs = 0; // (--runs; 0: 3, one with --quick)
  std::string write_path, write_elementwise_path, write_attention_path, write_conv_path, write_softmax_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--no-gemm") gemm = false;
    else if (a == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (a == "--write" && i + 1 < argc) write_path = argv[++i];
    else if (a == "--write-elementwise" && i + 1 < argc) write_elementwise_path = argv[++i];
    else if (a == "--write-attention" && i + 1 < argc) write_attention_path = argv[++i];
    else if (a == "--write-conv" && i + 1 < argc) write_conv_path = argv[++i];
    else if (a == "--write-softmax" && i + 1 < argc) write_softmax_path = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--no-gemm] [--runs N] [--write include/tenfold/tuned/gemm_cpu.hpp] [--write-elementwise "
                   "include/tenfold/tuned/elementwise_cpu.hpp] [--write-attention include/tenfold/tuned/attention_cpu.hpp] [--write-conv include/tenfold/tuned/conv_cpu.hpp] [--write-softmax include/tenfold/tuned/softmax_cpu.hpp]\n",
                   argv[0]);
      return 2;
    }
  }
  if (runs == 0) runs = quick ? 1 : 3;
  if (runs < 1 || runs > 9) {
    std::fprintf(stderr, "%s: --runs takes 1 to 9\n", argv[0]);
    return 2;
  }
  if (!gemm && !write_path.empty()) {
    std::fprintf(stderr, "%s: --write needs the GEMM's search (not --no-gemm)\n", argv[0]);
    return 2;
  }
  try {
    const machine_key here{tenfold::build_isa(), cache_kib(1, "Data"), cache_kib(2, "Unified"), index_t(cpu::thread_pool::instance().size())};
    const machine_key built = tenfold::build_machine;
    if (built.cores == 0)
      throw std::runtime_error("this build does not name its machine (TENFOLD_L1D_KIB, TENFOLD_L2_KIB, TENFOLD_CORES): configure with -DTENFOLD_NATIVE=ON");
    if (!(here == built)) {
      std::ostringstream o;
      o << "built for " << built.isa << ", L1d " << built.l1d_kib << " KiB, L2 " << built.l2_kib << " KiB, " << built.cores << " cores; running on "
        << here.l1d_kib << " KiB, " << here.l2_kib << " KiB, " << here.cores << " threads (TENFOLD_NUM_THREADS?): rebuild here, with the default thread count";
      throw std::runtime_error(o.str());
    }
    const std::string model = cpu_model();
    std::printf("tenfold_tune: %s; %.*s, L1d %ld KiB, L2 %ld KiB, %ld cores%s, %d run(s)\n", model.c_str(), int(built.isa.size()), built.isa.data(),
                long(built.l1d_kib), long(built.l2_kib), long(built.cores), quick ? " (quick)" : "", runs);
    const auto start = clock_type::now();
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    constexpr gemm_shape_class classes[] = {gemm_shape_class::few_rows, gemm_shape_class::small, gemm_shape_class::medium, gemm_shape_class::large};
    std::vector<std::vector<class_result>> gemm_runs(std::size(classes));
    std::vector<tune::elementwise_result> ew_runs;
    std::vector<tune::rows_streaming_result> rs_runs;
    std::vector<tune::rows_result> rows_runs;
    std::vector<tune::softmax_result> sm_runs;
    std::vector<tune::attention_result> at_runs;
    std::vector<tune::conv_result> cv_runs;
    for (int run = 1; run <= runs; ++run) {
      if (runs > 1) std::printf("run %d of %d\n", run, runs);
      for (std::size_t c = 0; gemm && c < std::size(classes); ++c) {
        const auto t0 = clock_type::now();
        const class_result r = tune_class(classes[c], quick, quick ? 0.005 : 0.03);
        const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
        std::printf("%-9s %3d tried, %d rejected, %5.1f s: best %s, %.3fx the defaults (worst shape %.3fx): %s\n",
                    std::string(cpu::name_of(classes[c])).c_str(), r.tried, r.rejected, s, describe(r.found).c_str(), r.speedup, r.worst,
                    !(r.best == gemm_config{})    ? "taken"
                    : !(r.found == gemm_config{}) ? "below the threshold, defaults kept"
                                                  : "the defaults are the fastest");
        gemm_runs[c].push_back(r);
      }
      ew_runs.push_back(tune::tune_elementwise(quick));
      rs_runs.push_back(tune::tune_rows_streaming(quick));
      const auto t_rows = clock_type::now();
      rows_runs.push_back(tune::tune_rows(quick, quick ? 0.002 : 0.02));
      report("rows tee", rows_runs.back().tee, t_rows);
      report("rows tail", rows_runs.back().tail, t_rows);
      sm_runs.push_back(tune::tune_softmax(quick, quick ? 0.002 : 0.02));
      const auto t_at = clock_type::now();
      at_runs.push_back(tune::tune_attention(quick, quick ? 0.005 : 0.03));
      report("attention", at_runs.back(), t_at);
      const auto t_cv = clock_type::now();
      cv_runs.push_back(tune::tune_conv(quick, quick ? 0.005 : 0.03));
      report("conv", cv_runs.back(), t_cv);
    }
    std::printf("search: %.0f s\n", std::chrono::duration<double>(clock_type::now() - start).count());

    // What the runs agree on.
    const std::string measured_on = model + ", " + date;
    std::vector<std::string> lines;
    for (std::size_t c = 0; gemm && c < std::size(classes); ++c) {
      const auto a = agree(gemm_runs[c]);
      class_result r{classes[c], a.best, a.best};
      lines.push_back(entry_line(built, r, measured_on + ": " + a.note));
      if (runs > 1) std::printf("%-9s %s: %s\n", std::string(cpu::name_of(classes[c])).c_str(), describe(a.best).c_str(), a.note.c_str());
    }
    std::vector<tune::search_result<cpu::row_prefetch_config>> tees, tails;
    for (const auto& r : rows_runs) tees.push_back(r.tee), tails.push_back(r.tail);
    const auto tee_a = agree(tees), tail_a = agree(tails);
    const auto at_a = agree(at_runs);
    const auto cv_a = agree(cv_runs);
    std::string streaming_seen, rows_streaming_seen, pipeline_seen, online_seen;
    std::vector<index_t> streaming, rows_streaming, pipeline, online;
    for (const auto& r : ew_runs) streaming.push_back(r.best.streaming_bytes);
    for (const auto& r : rs_runs) rows_streaming.push_back(r.from_bytes);
    for (const auto& r : rows_runs) pipeline.push_back(r.tee_pipeline_from_bytes);
    for (const auto& r : sm_runs) online.push_back(r.best.online_from_bytes);
    const index_t streaming_bytes = median_threshold(streaming, -1, streaming_seen, index_t(1) << 20, " MiB");
    const index_t rows_streaming_bytes = median_threshold(rows_streaming, -1, rows_streaming_seen, index_t(1) << 20, " MiB");
    const index_t pipeline_from = median_threshold(pipeline, cpu::elementwise_config{}.tee_pipeline_from_bytes, pipeline_seen, 1, " bytes");
    const index_t online_from = median_threshold(online, 0, online_seen, index_t(sizeof(float)), " floats");
    auto runs_note = [&](const char* what, const std::string& seen) { return std::string(what) + " (the median of " + std::to_string(runs) + " searches: " + seen + ")"; };
    if (runs > 1) {
      std::printf("rows tee  %s: %s\nrows tail %s: %s\nattention %s: %s\nconv      %s: %s\n", describe(tee_a.best).c_str(), tee_a.note.c_str(),
                  describe(tail_a.best).c_str(), tail_a.note.c_str(), describe(at_a.best).c_str(), at_a.note.c_str(), describe(cv_a.best).c_str(),
                  cv_a.note.c_str());
      std::printf("%s\n%s\n%s\n%s\n", runs_note("streaming stores", streaming_seen).c_str(), runs_note("rows' streaming stores", rows_streaming_seen).c_str(),
                  runs_note("softmax rows pipelined", pipeline_seen).c_str(), runs_note("softmax online", online_seen).c_str());
    }
    if (!write_path.empty()) {
      write_table(write_path, built, lines, gemm_table);
      std::printf("wrote %s (%zu entries for this machine)\n", write_path.c_str(), lines.size());
    }
    if (!write_elementwise_path.empty()) {
      std::ostringstream l;
      l << "    {" << machine_text(built) << ", {.streaming_bytes = " << streaming_bytes << ", .rows_streaming_bytes = " << rows_streaming_bytes
        << ", .tee_pipeline_from_bytes = " << pipeline_from
        << ", .tee = " << describe(tee_a.best) << ", .tail = " << describe(tail_a.best) << "}}, // " << measured_on << ": ";
      if (runs == 1) l << ew_runs[0].summary << "; " << rs_runs[0].summary << "; tee prefetch " << tee_a.note << "; tail prefetch " << tail_a.note << "; " << rows_runs[0].pipeline_summary;
      else
        l << runs_note("streaming stores", streaming_seen) << "; " << runs_note("rows' streaming stores", rows_streaming_seen) << "; tee prefetch " << tee_a.note << "; tail prefetch " << tail_a.note << "; "
          << runs_note("softmax rows pipelined", pipeline_seen);
      write_table(write_elementwise_path, built, {l.str()}, elementwise_table);
      std::printf("wrote %s (1 entry for this machine)\n", write_elementwise_path.c_str());
    }
    if (!write_softmax_path.empty()) {
      std::ostringstream l;
      l << "    {" << machine_text(built) << ", {.online_from_bytes = " << online_from << "}}, // " << measured_on << ": "
        << (runs == 1 ? sm_runs[0].summary : runs_note("online form from", online_seen));
      write_table(write_softmax_path, built, {l.str()}, softmax_table);
      std::printf("wrote %s (1 softmax entry for this machine)\n", write_softmax_path.c_str());
    }
    if (!write_attention_path.empty()) write_entry(write_attention_path, built, measured_on, at_a.best, at_a.note, attention_table, "attention");
    if (!write_conv_path.empty()) write_entry(write_conv_path, built, measured_on, cv_a.best, cv_a.note, conv_table, "conv");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tenfold_tune: %s\n", e.what());
    return 1;
  }
  return 0;
}
