#pragma once
// A model's parameters filled from, and saved to, a safetensors file by name.
//
// A model names its tensors with a member template that calls f once per tensor:
//
//   template <class F> void each(F&& f) {
//     f("embeddings.word_embeddings.weight", word);
//     f("embeddings.LayerNorm.weight", ln_gamma);
//     for (std::size_t i = 0; i < layers.size(); ++i)
//       layers[i].each(io::prefixed("encoder.layer." + std::to_string(i) + ".", f));
//   }
//
// (f takes the name as a std::string_view and a Tensor, a writable TensorMap or a Prepacked weight,
// which is packed once read: cpu/prepacked.hpp). That one list is the
// model's name map: load_parameters reads every tensor it names and save_parameters writes them.
//
// Loading checks the whole correspondence and fails with a tenfold::error naming the file, the tensor
// and what was expected against what was found: a name the model declares twice, a tensor the model
// wants that the file lacks, a tensor the file has that the model does not take (unless
// load_options::ignore lists it), a shape or dtype that differs. A dtype converts when the model's type
// holds the file's exactly (BF16/F16 -> float, I32 -> I64 ...: io/file_dtype.hpp); a rounding conversion
// (F32 into a bf16 tensor) is refused. Every check on names runs before the first tensor is copied, so
// a file for another model changes nothing; a bad element (a BOOL byte that is not 0 or 1) found while
// copying leaves the tensors before it loaded.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "../core/error.hpp"
#include "safetensors.hpp"

namespace tenfold::io {

// A visitor that names every tensor `prefix + name` before passing it to f: how a model lists its
// sub-modules' tensors under their path. f must outlive the returned visitor.
template <class F>
auto prefixed(std::string prefix, F& f) {
  return [prefix = std::move(prefix), &f](std::string_view name, auto& t) {
    std::string full = prefix;
    full += name;
    f(std::string_view(full), t);
  };
}

struct load_options {
  // File tensors the model does not take and that are not an error: exact names, or prefixes written
  // with a trailing '*' ("pooler.*").
  std::vector<std::string> ignore;
};

namespace detail {
inline constexpr const char* parameters_who = "tenfold::io::load_parameters";

inline bool ignored(const load_options& o, std::string_view name) {
  return std::any_of(o.ignore.begin(), o.ignore.end(), [&](const std::string& pattern) {
    if (!pattern.empty() && pattern.back() == '*')
      return name.substr(0, pattern.size() - 1) == std::string_view(pattern).substr(0, pattern.size() - 1);
    return name == pattern;
  });
}

inline std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < 8; ++i) (s += i ? ", " : "") += "'" + names[i] + "'";
  if (names.size() > 8) s += tenfold::detail::message(" and ", names.size() - 8, " more");
  return s;
}

// The model's names in declaration order, each with its shape and dtype for the messages.
template <class Model>
std::vector<std::pair<std::string, std::string>> declared(Model& model, const std::string& file) {
  std::vector<std::pair<std::string, std::string>> names;
  model.each([&](std::string_view name, auto& t) {
    using T = typename std::remove_cvref_t<decltype(t)>::value_type;
    names.emplace_back(std::string(name), tenfold::detail::message(
                                              info(file_dtype_of<T>()).safetensors, " ",
                                              std::remove_cvref_t<decltype(t)>::shape_string()));
  });
  std::map<std::string_view, int> seen;
  for (const auto& n : names)
    if (++seen[n.first] == 2)
      file_fail(parameters_who, file,
                tenfold::detail::message("the model declares the tensor '", n.first, "' twice (a name map must be one to one)"));
  return names;
}
} // namespace detail

// Fills every tensor model.each() names from the file (see the top of this file for the checks).
template <class Model>
void load_parameters(const safetensors_file& file, Model& model, const load_options& options = {}) {
  const auto names = detail::declared(model, file.path());
  std::vector<std::string> missing, unexpected;
  std::map<std::string_view, bool> wanted;
  for (const auto& [name, what] : names) {
    wanted.emplace(name, true);
    if (!file.contains(name)) missing.push_back(name + " (" + what + ")");
  }
  for (const auto& name : file.names())
    if (!wanted.count(name) && !detail::ignored(options, name)) unexpected.push_back(name);
  if (!missing.empty())
    detail::file_fail(detail::parameters_who, file.path(),
                      tenfold::detail::message(missing.size(), " of the model's ", names.size(),
                                               " tensors are not in the file: ", detail::name_list(missing)));
  if (!unexpected.empty())
    detail::file_fail(detail::parameters_who, file.path(),
                      tenfold::detail::message("the file has ", unexpected.size(),
                                               " tensors the model does not take: ", detail::name_list(unexpected),
                                               " (load_options::ignore skips them)"));
  // Shapes and dtypes, all before the first copy.
  model.each([&](std::string_view name, auto& t) {
    using Dst = std::remove_cvref_t<decltype(t)>;
    using T = typename Dst::value_type;
    const auto shape = file.shape(name);
    bool same = shape.size() == std::size_t(Dst::rank);
    for (std::size_t i = 0; same && i < shape.size(); ++i) same = shape[i] == std::uint64_t(Dst::shape[i]);
    const auto dtype = detail::safetensors_dtype(file.dtype(name));
    if (!same || !dtype || !detail::converts_exactly<T>(*dtype))
      detail::file_fail(detail::parameters_who, file.path(),
                        tenfold::detail::message("tensor '", name, "': ", file.dtype(name), " ",
                                                 detail::shape_string(shape), " in the file, the model's is ",
                                                 detail::info(detail::file_dtype_of<T>()).safetensors, " ",
                                                 Dst::shape_string(),
                                                 same ? " (the dtype does not convert exactly)" : ""));
  });
  model.each([&](std::string_view name, auto& t) {
    if constexpr (requires { t.weights(); t.pack(); }) { // a Prepacked weight
      file.read(name, t.weights());
      t.pack();
    } else {
      file.read(name, t);
    }
  });
}

template <class Model>
void load_parameters(const std::string& path, Model& model, const load_options& options = {}) {
  load_parameters(safetensors_file(path), model, options);
}

// Writes every tensor model.each() names, in that order, with the metadata given.
template <class Model>
void save_parameters(const std::string& path, Model& model, const std::map<std::string, std::string>& metadata = {}) {
  safetensors_writer w;
  model.each([&](std::string_view name, const auto& t) {
    if constexpr (requires { t.tensor(); }) w.add(std::string(name), t.tensor()); // a Prepacked weight
    else w.add(std::string(name), t);
  });
  for (const auto& [k, v] : metadata) w.metadata(k, v);
  w.write(path);
}

} // namespace tenfold::io
