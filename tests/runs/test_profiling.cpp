// The measurements behind `interplace profile` that need no second rank: per-node timings
// and the ping-pong's message sizes (the link itself is tested under mpirun by
// test_cli_profile.py).
#include <gtest/gtest.h>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/aux_heads.hpp"
#include "interplace/placement/zoo.hpp"
#include "interplace/runs/profiling.hpp"

namespace interplace::runs {
namespace {

TEST(Profiling, PingPongSizesArePowersOfFourUpToTheLargest) {
  const std::vector<int64_t> sizes = ping_pong_sizes(int64_t{64} << 20);
  ASSERT_EQ(sizes.size(), 14u);
  EXPECT_EQ(sizes.front(), 1);
  EXPECT_EQ(sizes.back(), int64_t{64} << 20);
  for (size_t i = 1; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], 4 * sizes[i - 1]);
  EXPECT_EQ(ping_pong_sizes(100), (std::vector<int64_t>{1, 4, 16, 64, 100}));
  EXPECT_EQ(ping_pong_sizes(1), (std::vector<int64_t>{1}));
  EXPECT_THROW(ping_pong_sizes(0), Error);
}

// A device sends whole floats: 1 B and 4 B are the same message, measured once, so that the
// link curve stays strictly ascending (a profile with two points at 4 B is refused).
TEST(Profiling, PingPongSizesOnADeviceAreWholeFloatsOnce) {
  EXPECT_EQ(ping_pong_sizes(100, 4), (std::vector<int64_t>{4, 16, 64, 100}));
  EXPECT_EQ(ping_pong_sizes(102, 4), (std::vector<int64_t>{4, 16, 64, 104}));
  EXPECT_EQ(ping_pong_sizes(1, 4), (std::vector<int64_t>{4}));
  EXPECT_EQ(ping_pong_sizes(64, 4), (std::vector<int64_t>{4, 16, 64}));
  const std::vector<int64_t> sizes = ping_pong_sizes(int64_t{64} << 20, 4);
  for (size_t i = 1; i < sizes.size(); ++i) EXPECT_GT(sizes[i], sizes[i - 1]);
  EXPECT_THROW(ping_pong_sizes(100, 0), Error);
}

TEST(Profiling, TimesEveryNodeOfACnn) {
  placement::ModelOptions options;
  options.batch_size = 2;
  options.width_multiplier = 0.25;
  const placement::Graph graph = placement::build_model("resnet20", options);
  const std::vector<placement::NodeTiming> timings = time_nodes(graph, {.warmup = 0, .repeats = 1});
  ASSERT_EQ(timings.size(), static_cast<size_t>(graph.node_count()));
  for (const placement::Node& node : graph.nodes()) {
    const placement::NodeTiming& t = timings[static_cast<size_t>(node.id)];
    EXPECT_EQ(t.name, node.name);
    if (node.op == "input") {
      EXPECT_EQ(t.forward_s, 0.0);
      EXPECT_EQ(t.backward_s, 0.0);
    } else if (node.op == "conv2d") {
      EXPECT_GT(t.forward_s, 0.0) << node.name;
      EXPECT_GT(t.backward_s, 0.0) << node.name;
    }
  }
}

// A profile prices the heads of whichever --aux-head a run picks: a head it did not time
// falls back to the roofline (aux_head_costs), which missed local steps by 15-20%.
TEST(Profiling, TimesTheAuxiliaryHeadsOfEveryWidth) {
  placement::ModelOptions options;
  options.batch_size = 2;
  options.width_multiplier = 0.25;
  const placement::Graph graph = placement::build_model("resnet20", options);
  const auto timed = time_aux_heads(graph, 0.25, {.warmup = 0, .repeats = 1});
  size_t study_heads = 0;
  for (const std::string& width : placement::aux_head_width_names()) {
    const auto heads = placement::distinct_aux_heads(
        graph, {.width_multiplier = 0.25, .width = placement::aux_head_width_by_name(width)});
    ASSERT_FALSE(heads.empty()) << width;
    for (const auto& [key, head] : heads) {
      const auto found = timed.find(key);
      ASSERT_NE(found, timed.end()) << width << " head " << key;
      EXPECT_GT(found->second.first, 0.0) << key;
      EXPECT_GT(found->second.second, 0.0) << key;
    }
    if (width == "study") study_heads = heads.size();
  }
  // More than the study's heads (widths can coincide at a boundary, so not their sum).
  EXPECT_GT(timed.size(), study_heads);
}

TEST(Profiling, TransformerGetsValidTokenIdsAndABoundHead) {
  placement::ModelOptions options;
  options.batch_size = 2;
  options.sequence_length = 8;
  const placement::Graph graph = placement::build_model("gpt-mini", options);
  // An out-of-range id would make the embedding throw; an unbound tied head too.
  const std::vector<placement::NodeTiming> timings = time_nodes(graph, {.warmup = 1, .repeats = 3});
  ASSERT_EQ(timings.size(), static_cast<size_t>(graph.node_count()));
  const placement::NodeTiming& head = timings.back();
  EXPECT_EQ(graph.nodes().back().op, "tied_linear");
  EXPECT_GT(head.forward_s, 0.0);
  EXPECT_GT(head.backward_s, 0.0);
}

TEST(Profiling, RejectsBadCounts) {
  const placement::Graph graph = placement::build_model("resnet20", {});
  for (NodeTimingOptions bad : {NodeTimingOptions{.repeats = 0}, NodeTimingOptions{.warmup = -1}}) {
    try {
      time_nodes(graph, bad);
      ADD_FAILURE() << "accepted repeats " << bad.repeats << ", warm-up " << bad.warmup;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    }
  }
  EXPECT_FALSE(cpu_device_name(3).empty());
  EXPECT_NE(cpu_device_name(3).find("(3 threads)"), std::string::npos);
}

}  // namespace
}  // namespace interplace::runs
