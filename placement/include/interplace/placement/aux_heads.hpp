// Auxiliary heads of the local and interlocking strategies (docs/strategies.md), built as
// small graphs from the same kernel layers as the model zoo, so their FLOPs, parameters
// and activation sizes are those of the heads the runtime trains.
//
// A head reads the tensor that crosses a stage boundary; its layers depend on the rank:
//   [N, C, H, W]  conv3x3 C->c1 (with bias), BN, ReLU, conv3x3 c1->c2 (with bias), BN,
//                 ReLU, global average pool, linear c2->classes, where c1 = 128 w and
//                 c2 = 64 w for the model's width multiplier w: the interlocking-
//                 backpropagation study's head ("conv128_bn_conv64_bn_gbpl_fc"); other
//                 widths by AuxHeadWidth (below)
//   [N, T, D]     layer norm, linear D->classes   (Transformers: classes = vocabulary);
//                 for a network of [N, classes] output (sequence classification, BERT)
//                 layer norm, the first token, linear D->classes, as its pooler reads it
//   [N, F]        linear F->classes
// where classes is the last dimension of the network's output (its last sink).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"

namespace interplace::placement {

// The widths (c1, c2) of a CNN head's two convolutions for a boundary tensor of C channels:
//   study         128 w, 64 w (w: the model's width multiplier): the study's code, whose
//                 heads all read 64-channel boundaries of its ResNet-34's first stage
//   capped        min(128 w, C), min(64 w, C): never wider than the tensor read (an
//                 uncapped head on a 16-channel CIFAR ResNet boundary costs more than the
//                 whole network: 115 MFLOP at 28x28, resnet20 is 63)
//   proportional  2 C, C: the study's ratio to the boundary it reads, at every boundary
enum class AuxHeadWidth { study, capped, proportional };
const std::vector<std::string>& aux_head_width_names();        // in enum order
AuxHeadWidth aux_head_width_by_name(const std::string& name);  // invalid_input listing them
const std::string& to_string(AuxHeadWidth width);

struct AuxHeadOptions {
  int64_t hidden_channels = 128;
  int64_t head_channels = 64;
  double width_multiplier = 1.0;  // the model's, so small variants get small heads
  AuxHeadWidth width = AuxHeadWidth::study;
};

// The head as a graph: node 0 is "aux.input" (the boundary tensor, op "input"), then the
// layers above. Throws invalid_input for a boundary tensor of another rank.
Graph aux_head_graph(const Graph& graph, NodeId boundary, const AuxHeadOptions& options = {});

struct AuxHeadCosts {
  double forward_s = 0.0;
  double backward_s = 0.0;
  int64_t parameter_count = 0;
  int64_t activation_bytes = 0;  // outputs of its layers (the input belongs to the stage)
};

// How far measured node times are from the roofline, per op: forward and backward time of
// the model's own nodes under a profile over their roofline time on the same device,
// summed per op ("" holds the ratio over all nodes). A profile holds no times for heads,
// whose layers are ops the model has too (convolution, batch norm, linear, ...), so a
// head's roofline time times its op's ratio is its time on the profiled machine.
struct HeadCalibration {
  struct Ratio {
    double forward = 1.0;
    double backward = 1.0;
  };
  // kind -> ratio; "" -> over all nodes. A kind is the op, with grouped convolutions
  // apart ("conv2d/grouped"): a depthwise convolution runs far below its roofline, and a
  // head's dense convolutions priced at its ratio cost several times their measured time.
  std::map<std::string, Ratio> by_kind;
  Ratio of(const Node& node) const;  // the kind's, else the overall, else 1
};
// Empty (every ratio 1) when the cost model has no profile: roofline costs need none.
HeadCalibration head_calibration(const Graph& graph, const NodeCosts& costs,
                                 const CostModel& cost_model);

// What identifies a head's cost: its layers' ops and output shapes (batch size included),
// e.g. "conv2d 8x128x16x16|batch_norm 8x128x16x16|...|linear 8x10"; the key of the
// profile's aux_head lines (Profile::aux_heads).
std::string aux_head_key(const Graph& head);

// A head's layers for every distinct head the graph's nodes give as stage boundaries (nodes
// with a [N,C,H,W], [N,T,D] or [N,F] output), with `options`: what `interplace profile`
// times (key -> head graph).
std::map<std::string, Graph> distinct_aux_heads(const Graph& graph, const AuxHeadOptions& options);

// Costs of the head's layers: with a profile that timed this head (its aux_head key), the
// measured sums; else the roofline on the cost model's device, times the calibration's
// ratio for each layer's kind (none: the roofline itself).
AuxHeadCosts aux_head_costs(const Graph& head, const CostModel& cost_model,
                            const HeadCalibration& calibration = {});

}  // namespace interplace::placement
