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
//   tenfold_tune --quick              # one shape per class, one round: a smoke run (CI)
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

#include "common.hpp"
#include "attention.hpp"
#include "conv.hpp"
#include "elementwise.hpp"
#include "rows.hpp"
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
      return {{1, 4096, 4096}, {4, 4096, 4096}, {16, 4096, 4096}, {16, 1536, 384}};
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
    << ", .parts_per_thread = " << c.parts_per_thread << ", .split = gemm_split_axis::" << axes[int(c.split)] << "}";
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
  if (few) p.push_back({"kc_in_place", {16, 32, 64, 128}, [](gemm_config& g) -> index_t& { return g.kc_in_place; }});
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
void write_entry(const std::string& path, const machine_key& m, const std::string& measured_on, const tune::search_result<Config>& r,
                 const table_format& f, const char* what) {
  std::ostringstream l, note;
  note << std::fixed;
  note.precision(3);
  if (r.taken()) note << r.speedup << "x the defaults (worst shape " << r.worst << "x)";
  else if (r.off_defaults()) note << "defaults kept (best found " << describe(r.found) << ": " << r.speedup << "x, worst shape " << r.worst << "x)";
  else note << "the defaults are the fastest";
  l << "    {" << machine_text(m) << ", " << describe(r.best) << "}, // " << measured_on << ": " << note.str();
  write_table(path, m, {l.str()}, f);
  std::printf("wrote %s (1 %s entry for this machine)\n", path.c_str(), what);
}
} // namespace

int main(int argc, char** argv) {
  bool quick = false, gemm = true;
  std::string write_path, write_elementwise_path, write_attention_path, write_conv_path, write_softmax_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--no-gemm") gemm = false;
    else if (a == "--write" && i + 1 < argc) write_path = argv[++i];
    else if (a == "--write-elementwise" && i + 1 < argc) write_elementwise_path = argv[++i];
    else if (a == "--write-attention" && i + 1 < argc) write_attention_path = argv[++i];
    else if (a == "--write-conv" && i + 1 < argc) write_conv_path = argv[++i];
    else if (a == "--write-softmax" && i + 1 < argc) write_softmax_path = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--no-gemm] [--write include/tenfold/tuned/gemm_cpu.hpp] [--write-elementwise "
                   "include/tenfold/tuned/elementwise_cpu.hpp] [--write-attention include/tenfold/tuned/attention_cpu.hpp] [--write-conv include/tenfold/tuned/conv_cpu.hpp] [--write-softmax include/tenfold/tuned/softmax_cpu.hpp]\n",
                   argv[0]);
      return 2;
    }
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
    std::printf("tenfold_tune: %s; %.*s, L1d %ld KiB, L2 %ld KiB, %ld cores%s\n", model.c_str(), int(built.isa.size()), built.isa.data(), long(built.l1d_kib),
                long(built.l2_kib), long(built.cores), quick ? " (quick)" : "");
    const auto start = clock_type::now();
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    std::vector<std::string> lines;
    for (gemm_shape_class cls : {gemm_shape_class::few_rows, gemm_shape_class::small, gemm_shape_class::medium, gemm_shape_class::large}) {
      if (!gemm) break;
      const auto t0 = clock_type::now();
      const class_result r = tune_class(cls, quick, quick ? 0.005 : 0.03);
      const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
      const bool taken = !(r.best == gemm_config{});
      const bool searched_off_defaults = !(r.found == gemm_config{});
      std::printf("%-9s %3d tried, %d rejected, %5.1f s: best %s, %.3fx the defaults (worst shape %.3fx): %s\n",
                  std::string(cpu::name_of(cls)).c_str(), r.tried, r.rejected, s, describe(r.found).c_str(), r.speedup, r.worst,
                  taken ? "taken" : searched_off_defaults ? "below the threshold, defaults kept" : "the defaults are the fastest");
      std::ostringstream note;
      note << model << ", " << date << ": " << std::fixed;
      note.precision(3);
      if (taken) note << r.speedup << "x the defaults";
      else if (searched_off_defaults)
        note << "defaults kept (best found " << describe(r.found) << ": " << r.speedup << "x, worst shape " << r.worst << "x)";
      else note << "the defaults are the fastest";
      lines.push_back(entry_line(built, r, note.str()));
    }
    const tune::elementwise_result ew = tune::tune_elementwise(quick);
    const auto t_rows = clock_type::now();
    const tune::rows_result rows = tune::tune_rows(quick, quick ? 0.002 : 0.02);
    report("rows tee", rows.tee, t_rows);
    report("rows tail", rows.tail, t_rows);
    const tune::softmax_result sm = tune::tune_softmax(quick, quick ? 0.002 : 0.02);
    const auto t_at = clock_type::now();
    const tune::attention_result at = tune::tune_attention(quick, quick ? 0.005 : 0.03);
    report("attention", at, t_at);
    const auto t_cv = clock_type::now();
    const tune::conv_result cv = tune::tune_conv(quick, quick ? 0.005 : 0.03);
    report("conv", cv, t_cv);
    std::printf("search: %.0f s\n", std::chrono::duration<double>(clock_type::now() - start).count());
    if (!write_path.empty()) {
      write_table(write_path, built, lines, gemm_table);
      std::printf("wrote %s (%zu entries for this machine)\n", write_path.c_str(), lines.size());
    }
    if (!write_elementwise_path.empty()) {
      std::ostringstream l;
      auto note = [](const char* kind, const tune::search_result<cpu::row_prefetch_config>& r) {
        std::ostringstream o;
        o << std::fixed;
        o.precision(3);
        o << kind << " prefetch ";
        if (r.taken()) o << r.speedup << "x the defaults (worst shape " << r.worst << "x)";
        else if (r.off_defaults()) o << "defaults kept (best found " << describe(r.found) << ": " << r.speedup << "x, worst shape " << r.worst << "x)";
        else o << "the defaults are the fastest";
        return o.str();
      };
      l << "    {" << machine_text(built) << ", {.streaming_bytes = " << ew.best.streaming_bytes
        << ", .tee_pipeline_from_bytes = " << rows.tee_pipeline_from_bytes << ", .tee = " << describe(rows.tee.best)
        << ", .tail = " << describe(rows.tail.best) << "}}, // " << model << ", " << date << ": " << ew.summary << "; "
        << note("tee", rows.tee) << "; " << note("tail", rows.tail) << "; " << rows.pipeline_summary;
      write_table(write_elementwise_path, built, {l.str()}, elementwise_table);
      std::printf("wrote %s (1 entry for this machine)\n", write_elementwise_path.c_str());
    }
    if (!write_softmax_path.empty()) {
      std::ostringstream l;
      l << "    {" << machine_text(built) << ", {.online_from_bytes = " << sm.best.online_from_bytes << "}}, // "
        << model << ", " << date << ": " << sm.summary;
      write_table(write_softmax_path, built, {l.str()}, softmax_table);
      std::printf("wrote %s (1 softmax entry for this machine)\n", write_softmax_path.c_str());
    }
    if (!write_attention_path.empty()) write_entry(write_attention_path, built, model + ", " + date, at, attention_table, "attention");
    if (!write_conv_path.empty()) write_entry(write_conv_path, built, model + ", " + date, cv, conv_table, "conv");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tenfold_tune: %s\n", e.what());
    return 1;
  }
  return 0;
}
