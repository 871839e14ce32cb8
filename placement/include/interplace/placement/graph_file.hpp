// Graph files: a network's graph as the versioned JSON of docs/your-network.md, written by
// `interplace graph --save-graph` (to_json of graph_export.hpp) and by the importers
// (importers/: PyTorch and ONNX), read wherever a model is taken (--graph-file, the sweep
// key graph_file).
//
// Reading checks everything before it builds anything: the file (a regular file of at most
// GraphFileLimits::max_file_bytes), its nesting (before the JSON parser sees it), then every
// key, count, size and reference of the parsed text, then the graph (ids, names, edges,
// cycles), and for every node with a kernel layer that the layer, asked at the file's batch
// size, gives the file's output shape, FLOPs and parameter count. Errors are invalid_input
// naming the file and the node or edge.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "interplace/placement/graph.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {

inline constexpr std::string_view kGraphFormatName = "interplace-graph";
inline constexpr int64_t kGraphFormatVersion = 1;
// The op of a node without a kernel layer: its costs are the file's (an importer's
// estimate), its original op in the string attribute "source_op". Simulation, orders and
// placers take such nodes; training refuses them (opaque_nodes).
inline constexpr std::string_view kOpaqueOp = "opaque";

struct GraphFileLimits {
  static constexpr int64_t max_file_bytes = int64_t{16} << 20;
  static constexpr int max_depth = 16;  // JSON nesting; a graph file needs 4
  static constexpr int64_t max_nodes = 200'000;
  static constexpr int64_t max_inputs = 4096;                  // of one node
  static constexpr int64_t max_rank = 8;                       // dimensions of an output shape
  static constexpr int64_t max_elements = int64_t{1} << 40;    // of one output
  static constexpr int64_t max_flops = int64_t{1} << 56;       // of one node, each kind
  static constexpr int64_t max_parameters = int64_t{1} << 40;  // of one node
  static constexpr int64_t max_name_bytes = 1024;              // names, ops, strings
  static constexpr int64_t max_attributes = 256;               // of one node
};

// What a graph file holds beyond the graph.
struct GraphFile {
  Graph graph;         // at the file's batch size
  std::string family;  // "family" of the file; "imported" when absent
  std::string source;  // "source" of the file (what made it); may be empty
};

// Parses and validates the text of a graph file; `source` names it in errors.
GraphFile parse_graph_file(std::string_view text, std::string_view source = "<graph file>");
// check_input_file, then parse_graph_file.
GraphFile read_graph_file(const std::filesystem::path& path);

// to_json(graph, family) into `path` (overwritten); throws runtime when it cannot write.
void write_graph_file(const std::filesystem::path& path, const Graph& graph,
                      std::string_view family = {});

// The same network for another batch size (every node's output shape begins with the batch
// dimension): nodes with a kernel layer are asked again at the new shapes; opaque nodes'
// FLOPs and bytes scale with the batch (rounded), their parameters stay. Throws
// invalid_input when a size passes the limits above.
Graph rebatch_graph(const Graph& graph, int64_t batch_size);

// The nodes without a kernel layer (op "opaque"), ascending id.
std::vector<NodeId> opaque_nodes(const Graph& graph);
// "3 nodes have no kernel layer: 'a' (hardswish), 'b' (hardswish), 'c' (mul)" (at most
// `listed` named); empty when every node has one.
std::string opaque_summary(const Graph& graph, int listed = 8);

// Throws invalid_input naming the first model option (ModelOptions other than batch_size) that
// differs from its default: a graph file fixes the shapes those options change. `prefix` is
// how the caller spells options: "--" gives --image-size, "model_options."
// model_options.image_size.
void check_graph_file_options(const ModelOptions& options, std::string_view prefix);

// FNV-1a 64 of the file's bytes as 16 hex digits (the sweep's configuration id holds it, so
// an edited file is another configuration). Checks the file as read_graph_file does.
std::string graph_file_digest(const std::filesystem::path& path);

}  // namespace interplace::placement
