#include "interplace/placement/layer_factory.hpp"

#include <functional>
#include <map>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/activation.hpp"
#include "interplace/kernels/layers/attend.hpp"
#include "interplace/kernels/layers/attention.hpp"
#include "interplace/kernels/layers/batch_norm.hpp"
#include "interplace/kernels/layers/combine.hpp"
#include "interplace/kernels/layers/conv2d.hpp"
#include "interplace/kernels/layers/dropout.hpp"
#include "interplace/kernels/layers/elementwise.hpp"
#include "interplace/kernels/layers/embedding.hpp"
#include "interplace/kernels/layers/layer_norm.hpp"
#include "interplace/kernels/layers/linear.hpp"
#include "interplace/kernels/layers/pad.hpp"
#include "interplace/kernels/layers/pooling.hpp"
#include "interplace/kernels/layers/reshape.hpp"
#include "interplace/kernels/layers/select_token.hpp"
#include "interplace/kernels/layers/tied_linear.hpp"

namespace interplace::placement {

namespace {

using kernels::Layer;

// Typed attribute access with errors that name the op and the attribute.
class Args {
 public:
  Args(std::string_view op, const Attributes& attributes) : op_(op), attributes_(attributes) {}

  int64_t integer(const std::string& key) const {
    const AttributeValue& v = find(key);
    if (const auto* i = std::get_if<int64_t>(&v)) return *i;
    throw_invalid("op " + std::string(op_) + ": attribute '" + key + "' must be an integer");
  }
  int64_t integer(const std::string& key, int64_t fallback) const {
    return has(key) ? integer(key) : fallback;
  }
  bool has(const std::string& key) const { return attributes_.count(key) != 0; }
  double real(const std::string& key, double fallback) const {
    const auto it = attributes_.find(key);
    if (it == attributes_.end()) return fallback;
    if (const auto* d = std::get_if<double>(&it->second)) return *d;
    if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
    throw_invalid("op " + std::string(op_) + ": attribute '" + key + "' must be a number");
  }
  bool flag(const std::string& key, bool fallback) const {
    return integer(key, fallback ? 1 : 0) != 0;
  }
  const std::string& text(const std::string& key) const {
    const AttributeValue& v = find(key);
    if (const auto* t = std::get_if<std::string>(&v)) return *t;
    throw_invalid("op " + std::string(op_) + ": attribute '" + key + "' must be a string");
  }

 private:
  const AttributeValue& find(const std::string& key) const {
    const auto it = attributes_.find(key);
    if (it == attributes_.end()) {
      throw_invalid("op " + std::string(op_) + ": missing attribute '" + key + "'");
    }
    return it->second;
  }
  std::string_view op_;
  const Attributes& attributes_;
};

using Factory = std::function<std::unique_ptr<Layer>(const Args&)>;

const std::map<std::string, Factory, std::less<>>& factories() {
  static const std::map<std::string, Factory, std::less<>> table = {
      {"conv2d",
       [](const Args& a) {
         // "kernel" and "padding" apply to both axes; kernel_h/kernel_w and
         // padding_h/padding_w override one axis (Inception's 1x7 and 7x1).
         const auto axis = [&](const std::string& key, const std::string& both, int64_t fallback) {
           return a.has(key) ? a.integer(key) : a.integer(both, fallback);
         };
         const auto kernel_extent = [&](const std::string& key) {
           return a.has(key) ? a.integer(key) : a.integer("kernel");
         };
         return std::make_unique<kernels::Conv2d>(
             a.integer("in_channels"), a.integer("out_channels"),
             kernels::Extent2d{kernel_extent("kernel_h"), kernel_extent("kernel_w")},
             a.integer("stride", 1),
             kernels::Extent2d{axis("padding_h", "padding", 0), axis("padding_w", "padding", 0)},
             a.integer("groups", 1), a.flag("bias", false));
       }},
      {"batch_norm",
       [](const Args& a) {
         return std::make_unique<kernels::BatchNorm2d>(a.integer("channels"),
                                                       static_cast<float>(a.real("epsilon", 1e-5)),
                                                       static_cast<float>(a.real("momentum", 0.1)));
       }},
      {"relu", [](const Args&) { return std::make_unique<kernels::ReLU>(); }},
      {"relu6", [](const Args&) { return std::make_unique<kernels::ReLU6>(); }},
      {"gelu", [](const Args&) { return std::make_unique<kernels::GELU>(); }},
      {"tanh", [](const Args&) { return std::make_unique<kernels::Tanh>(); }},
      {"sigmoid", [](const Args&) { return std::make_unique<kernels::Sigmoid>(); }},
      {"multiply", [](const Args&) { return std::make_unique<kernels::Multiply>(); }},
      {"affine",
       [](const Args& a) {
         return std::make_unique<kernels::Affine>(static_cast<float>(a.real("scale", 1.0)),
                                                  static_cast<float>(a.real("shift", 0.0)));
       }},
      {"slice",
       [](const Args& a) {
         return std::make_unique<kernels::Slice>(a.integer("offset"), a.integer("length"));
       }},
      {"max_pool",
       [](const Args& a) {
         return std::make_unique<kernels::MaxPool2d>(a.integer("kernel"), a.integer("stride"),
                                                     a.integer("padding", 0));
       }},
      {"avg_pool",
       [](const Args& a) {
         return std::make_unique<kernels::AvgPool2d>(a.integer("kernel"), a.integer("stride"),
                                                     a.integer("padding", 0),
                                                     a.flag("count_include_pad", false));
       }},
      {"pad2d",
       [](const Args& a) {
         return std::make_unique<kernels::Pad2d>(a.integer("top", 0), a.integer("bottom", 0),
                                                 a.integer("left", 0), a.integer("right", 0));
       }},
      {"global_avg_pool", [](const Args&) { return std::make_unique<kernels::GlobalAvgPool>(); }},
      {"linear",
       [](const Args& a) {
         return std::make_unique<kernels::Linear>(a.integer("in_features"),
                                                  a.integer("out_features"), a.flag("bias", true));
       }},
      {"add", [](const Args&) { return std::make_unique<kernels::Add>(); }},
      {"concat", [](const Args&) { return std::make_unique<kernels::Concat>(); }},
      {"flatten", [](const Args&) { return std::make_unique<kernels::Flatten>(); }},
      {"dropout",
       [](const Args& a) {
         return std::make_unique<kernels::Dropout>(static_cast<float>(a.real("p", 0.0)),
                                                   static_cast<uint64_t>(a.integer("seed", 0)));
       }},
      {"layer_norm",
       [](const Args& a) {
         return std::make_unique<kernels::LayerNorm>(a.integer("features"),
                                                     static_cast<float>(a.real("epsilon", 1e-5)));
       }},
      {"embedding",
       [](const Args& a) {
         return std::make_unique<kernels::Embedding>(a.integer("vocab_size"),
                                                     a.integer("max_positions"), a.integer("dim"),
                                                     a.integer("token_types", 0));
       }},
      {"causal_self_attention",
       [](const Args& a) {
         return std::make_unique<kernels::CausalSelfAttention>(a.integer("dim"),
                                                               a.integer("heads"));
       }},
      {"self_attention",
       [](const Args& a) {
         return std::make_unique<kernels::SelfAttention>(a.integer("dim"), a.integer("heads"),
                                                         /*causal=*/false);
       }},
      {"attend", [](const Args&) { return std::make_unique<kernels::Attend>(); }},
      {"select_token",
       [](const Args& a) { return std::make_unique<kernels::SelectToken>(a.integer("index", 0)); }},
      // Unbound: whoever runs the graph binds it to the parameter named by "tied_parameter"
      // of the node named by "tied_to" (see zoo.hpp); both are required so that no graph
      // can carry a tied layer without saying what it shares.
      {"tied_linear",
       [](const Args& a) {
         a.text("tied_to");
         a.text("tied_parameter");
         return std::make_unique<kernels::TiedLinear>(a.integer("in_features"),
                                                      a.integer("out_features"));
       }},
  };
  return table;
}

}  // namespace

const std::vector<std::string>& layer_op_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& [name, factory] : factories()) all.push_back(name);
    return all;
  }();
  return names;
}

std::unique_ptr<Layer> make_layer(std::string_view op, const Attributes& attributes) {
  const auto& table = factories();
  const auto it = table.find(op);
  if (it == table.end()) {
    std::string valid;
    for (const std::string& name : layer_op_names()) valid += (valid.empty() ? "" : ", ") + name;
    throw_invalid("unknown layer op '" + std::string(op) + "' (known: " + valid + ")");
  }
  return it->second(Args(op, attributes));
}

}  // namespace interplace::placement
