#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "graph_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/profile.hpp"

namespace interplace::placement {
namespace {

DeviceSpec test_device() {
  return {"test-gpu", 1e12, 1e11, int64_t{1} << 30};
}

Profile sample_profile() {
  Profile profile;
  profile.device_name = "test-gpu";
  profile.batch_size = 1;
  profile.link = {2.5e-6, 2.5e10};
  profile.nodes = {
      {"n0", 1e-4, 2e-4, 5e-5}, {"n1", 3.25e-5, 0.0}, {"n2", 0.1, 0.3}, {"n3", 7e-7, 1e-6}};
  return profile;
}

std::string profile_text(const Profile& profile) {
  std::ostringstream out;
  write_profile(out, profile);
  return out.str();
}

Profile parse(const std::string& text) {
  std::istringstream in(text);
  return read_profile(in, "test.tsv");
}

std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
    return error.what();
  }
  ADD_FAILURE() << "accepted:\n" << text;
  return "";
}

TEST(CostModel, RooflineTakesTheSlowerOfComputeAndMemory) {
  // Node 1 of the diamond: 100 forward FLOPs, 200 backward, 10 parameters, 16 output
  // bytes, one 16-byte input: bytes = 16 + 16 + 40 = 72.
  const Graph graph = testing::diamond();
  const CostModel compute_bound({"d", 1e3, 1e6, 1 << 20}, {});
  const NodeCosts a = compute_bound.node_costs(graph);
  EXPECT_DOUBLE_EQ(a.forward_s[1], 100.0 / 1e3);
  EXPECT_DOUBLE_EQ(a.backward_s[1], 200.0 / 1e3);
  // A pass for the input gradient alone skips the 100 FLOPs of the weight gradient.
  EXPECT_DOUBLE_EQ(a.backward_input_s[1], 100.0 / 1e3);
  const CostModel memory_bound({"d", 1e9, 100.0, 1 << 20}, {});
  const NodeCosts b = memory_bound.node_costs(graph);
  EXPECT_DOUBLE_EQ(b.forward_s[1], 72.0 / 100.0);
  EXPECT_DOUBLE_EQ(b.forward_s[3], (32.0 + 16.0 + 40.0) / 100.0);  // two inputs
  EXPECT_DOUBLE_EQ(b.forward_s[0], (16.0 + 40.0) / 100.0);         // no input
}

TEST(CostModel, CommunicationIsLatencyPlusBytesOverBandwidth) {
  const CostModel model(test_device(), {1e-5, 1e9});
  EXPECT_DOUBLE_EQ(model.transfer_s(0), 1e-5);
  EXPECT_DOUBLE_EQ(model.transfer_s(1'000'000), 1e-5 + 1e-3);
  const CostModel free_link(test_device(), {});
  EXPECT_EQ(free_link.transfer_s(1 << 30), 0.0);
}

TEST(CostModel, ParameterStateCountsWeightsGradientsAndOptimizerState) {
  EXPECT_EQ(CostModel(test_device(), {}, OptimizerKind::sgd).parameter_state_bytes(10), 80);
  EXPECT_EQ(CostModel(test_device(), {}, OptimizerKind::sgd_momentum).parameter_state_bytes(10),
            120);
  EXPECT_EQ(CostModel(test_device(), {}, OptimizerKind::adamw).parameter_state_bytes(10), 160);
  const NodeCosts costs = CostModel(test_device(), {}).node_costs(testing::diamond());
  EXPECT_EQ(costs.memory_bytes(0, 1), 120 + 16);
  EXPECT_EQ(costs.memory_bytes(0, 4), 120 + 64);
  EXPECT_EQ(optimizer_by_name("adamw"), OptimizerKind::adamw);
  EXPECT_THROW(optimizer_by_name("adam"), Error);
}

TEST(CostModel, RejectsBadDevicesAndLinks) {
  EXPECT_THROW(CostModel({"d", 0.0, 1e9, 1}, {}), Error);
  EXPECT_THROW(CostModel({"d", 1e9, -1.0, 1}, {}), Error);
  EXPECT_THROW(CostModel({"d", 1e9, 1e9, 0}, {}), Error);
  EXPECT_THROW(CostModel(test_device(), {-1.0, 1e9}), Error);
  EXPECT_THROW(CostModel(test_device(), {0.0, 0.0}), Error);
}

TEST(CostModel, ProfileSuppliesNodeTimesAndLink) {
  const Graph graph = testing::diamond();
  const CostModel model = CostModel::from_profile(sample_profile(), test_device());
  const NodeCosts costs = model.node_costs(graph);
  EXPECT_DOUBLE_EQ(costs.forward_s[2], 0.1);
  EXPECT_DOUBLE_EQ(costs.backward_s[2], 0.3);
  // Measured input-only times are used as they are; a profile without them (written
  // before they were measured) scales backward_s by the input gradient's FLOP share (1/2).
  EXPECT_DOUBLE_EQ(costs.backward_input_s[0], 5e-5);
  EXPECT_DOUBLE_EQ(costs.backward_input_s[2], 0.15);
  EXPECT_DOUBLE_EQ(model.transfer_s(25'000), 2.5e-6 + 1e-6);
  EXPECT_EQ(model.device().memory_capacity_bytes, test_device().memory_capacity_bytes);
}

// The runtime's whole-graph units minus the per-node sums are spread over the compute nodes
// (the diamond's 4 nodes are all compute nodes here: op "linear").
TEST(CostModel, ProfileCalibratesNodeTimesToTheRuntimesUnits) {
  const Graph graph = testing::diamond();
  Profile profile = sample_profile();
  double forward_sum = 0.0, backward_sum = 0.0;
  for (const NodeTiming& n : profile.nodes) {
    forward_sum += n.forward_s;
    backward_sum += n.backward_s;
  }
  profile.runtime_forward_s = forward_sum + 4 * 0.01;    // 10 ms more per node
  profile.runtime_backward_s = backward_sum - 4 * 1e-7;  // a little less per node
  const NodeCosts plain =
      CostModel::from_profile(sample_profile(), test_device()).node_costs(graph);
  const NodeCosts calibrated = CostModel::from_profile(profile, test_device()).node_costs(graph);
  for (NodeId id = 0; id < graph.node_count(); ++id) {
    EXPECT_NEAR(calibrated.forward_s[id], plain.forward_s[id] + 0.01, 1e-12) << id;
    // Never below zero (node n1 has a backward time of 0).
    EXPECT_NEAR(calibrated.backward_s[id], std::max(0.0, plain.backward_s[id] - 1e-7), 1e-12) << id;
    EXPECT_NEAR(calibrated.backward_input_s[id], std::max(0.0, plain.backward_input_s[id] - 1e-7),
                1e-12)
        << id;
  }
  // The keys survive the file; a profile without them is read as not calibrated.
  const Profile back = parse(profile_text(profile));
  EXPECT_EQ(back.runtime_forward_s, profile.runtime_forward_s);
  EXPECT_EQ(back.runtime_backward_s, profile.runtime_backward_s);
  EXPECT_TRUE(std::isnan(back.runtime_optimizer_s));
  EXPECT_EQ(profile_text(sample_profile()).find("runtime_"), std::string::npos);
}

// The rest of the runtime's 1-rank step (drawing the batch) is charged per sample of the
// profile's batch size; it survives the file; unmeasured, it is 0.
TEST(CostModel, MiniBatchOverheadScalesWithTheSamples) {
  Profile profile = sample_profile();
  profile.batch_size = 4;
  EXPECT_EQ(CostModel::from_profile(profile, test_device()).mini_batch_overhead_s(16), 0.0);
  profile.runtime_overhead_s = 0.002;
  const CostModel model = CostModel::from_profile(profile, test_device());
  EXPECT_DOUBLE_EQ(model.mini_batch_overhead_s(4), 0.002);
  EXPECT_DOUBLE_EQ(model.mini_batch_overhead_s(16), 0.008);
  EXPECT_EQ(CostModel(test_device(), {}).mini_batch_overhead_s(16), 0.0);
  EXPECT_EQ(parse(profile_text(profile)).runtime_overhead_s, 0.002);
  EXPECT_THROW(parse(profile_text(sample_profile()) + "runtime_overhead_s\t-1\n"), Error);
}

// Node times measured inside the runtime's steps replace the solo ones; the input-only
// backward keeps its solo share of the backward (here 1/4), of the runtime's backward.
TEST(CostModel, RuntimeNodeTimesReplaceTheSoloOnes) {
  const Graph graph = testing::diamond();
  Profile profile = sample_profile();
  for (NodeTiming& n : profile.nodes) {
    n.backward_input_s = 0.25 * n.backward_s;
    n.runtime_forward_s = n.forward_s + 0.01;
    n.runtime_backward_s = n.backward_s + 0.02;
  }
  const NodeCosts costs = CostModel::from_profile(profile, test_device()).node_costs(graph);
  for (const NodeTiming& n : profile.nodes) {
    const NodeId id = graph.id_of(n.name);
    EXPECT_DOUBLE_EQ(costs.forward_s[id], n.forward_s + 0.01) << n.name;
    EXPECT_DOUBLE_EQ(costs.backward_s[id], n.backward_s + 0.02) << n.name;
    // A node whose solo backward took 0 (n1) has no share to keep: nothing is saved.
    const double share = n.backward_s > 0.0 ? 0.25 : 1.0;
    EXPECT_NEAR(costs.backward_input_s[id], share * (n.backward_s + 0.02), 1e-15) << n.name;
  }
  // They survive the file (7 fields), and need the input-only time beside them.
  const Profile back = parse(profile_text(profile));
  EXPECT_EQ(back.nodes[1].runtime_backward_s, profile.nodes[1].runtime_backward_s);
  profile.nodes[1].backward_input_s = std::nan("");
  EXPECT_THROW(profile_text(profile), Error);
}

// A rank's node times grow with its working set as the profile's 1-rank runs with M
// micro-batches in flight measured: at the whole graph's working set with M in flight the
// factor is units(M) / units(1), linear in bytes between, held at the ends.
TEST(CostModel, WorkingSetFactorFollowsTheInFlightRuns) {
  const Graph graph = testing::diamond();
  Profile profile = sample_profile();
  const CostModel plain = CostModel::from_profile(profile, test_device());
  const NodeCosts plain_costs = plain.node_costs(graph);
  EXPECT_FALSE(plain.has_working_set_factor());
  EXPECT_EQ(plain.working_set_factor(plain_costs, int64_t{1} << 40).forward, 1.0);
  profile.runtime_forward_s = 0.2;
  profile.runtime_backward_s = 0.4;
  profile.runtime_in_flight = {{4, {0.22, 0.42}}, {8, {0.26, 0.5}}};
  const CostModel model = CostModel::from_profile(profile, test_device());
  ASSERT_TRUE(model.has_working_set_factor());
  const NodeCosts costs = model.node_costs(graph);
  const auto working_set = [&](int in_flight) {
    int64_t bytes = 0;
    for (NodeId id = 0; id < costs.node_count(); ++id) bytes += costs.memory_bytes(id, in_flight);
    return bytes;
  };
  ASSERT_LT(working_set(1), working_set(4));
  const auto expect = [&](int64_t bytes, double forward, double backward) {
    const WorkingSetFactor f = model.working_set_factor(costs, bytes);
    EXPECT_NEAR(f.forward, forward, 1e-12) << bytes;
    EXPECT_NEAR(f.backward, backward, 1e-12) << bytes;
  };
  expect(0, 1.0, 1.0);
  expect(working_set(1), 1.0, 1.0);
  expect(working_set(4), 1.1, 1.05);
  expect(working_set(8), 1.3, 1.25);
  expect(100 * working_set(8), 1.3, 1.25);
  // Working sets grow linearly in M, so M = 6 lies halfway between the M = 4 and 8 points.
  expect(working_set(6), 1.2, 1.15);
  // The lines survive the file; malformed ones are refused.
  EXPECT_EQ(parse(profile_text(profile)).runtime_in_flight, profile.runtime_in_flight);
  const std::string base = profile_text(sample_profile());
  EXPECT_NE(parse_error(base + "runtime_in_flight\t1\t0.1\t0.2\n").find("2..4096"),
            std::string::npos);
  EXPECT_NE(parse_error(base + "runtime_in_flight\t4\t0.1\n").find("runtime_in_flight, M"),
            std::string::npos);
  EXPECT_NE(parse_error(base + "runtime_in_flight\t4\t0.1\t0.2\nruntime_in_flight\t4\t0.1\t0.2\n")
                .find("appears twice"),
            std::string::npos);
  parse_error(base + "runtime_in_flight\t4\t-0.1\t0.2\n");
}

TEST(CostModel, ProfileMustMatchGraphAndDevice) {
  const Graph graph = testing::diamond();
  Profile wrong_batch = sample_profile();
  wrong_batch.batch_size = 8;
  EXPECT_THROW(CostModel::from_profile(wrong_batch, test_device()).node_costs(graph), Error);
  Profile missing = sample_profile();
  missing.nodes.pop_back();
  EXPECT_THROW(CostModel::from_profile(missing, test_device()).node_costs(graph), Error);
  Profile extra = sample_profile();
  extra.nodes.push_back({"other", 1.0, 1.0});
  EXPECT_THROW(CostModel::from_profile(extra, test_device()).node_costs(graph), Error);
  DeviceSpec other = test_device();
  other.name = "other-gpu";
  EXPECT_THROW(CostModel::from_profile(sample_profile(), other), Error);
}

// Other model options (a width multiplier, an image size) keep the node names but change
// the graph: a profile that recorded its graph's totals refuses another graph's.
TEST(CostModel, ProfileOfOtherModelOptionsIsRefused) {
  const Graph graph = testing::diamond();
  Profile same = sample_profile();
  same.graph_parameter_count = graph.total_parameter_count();
  same.graph_forward_flops = graph.total_forward_flops();
  EXPECT_NO_THROW(CostModel::from_profile(same, test_device()).node_costs(graph));
  Profile wider = same;
  wider.graph_parameter_count += 1;
  try {
    CostModel::from_profile(wider, test_device()).node_costs(graph);
    ADD_FAILURE() << "a profile of another graph was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("same model options"), std::string::npos) << e.what();
  }
  Profile other_flops = same;
  other_flops.graph_forward_flops += 1000;
  EXPECT_THROW(CostModel::from_profile(other_flops, test_device()).node_costs(graph), Error);
  // The totals survive the file, and a file without them (older) is still read.
  const Profile back = parse(profile_text(same));
  EXPECT_EQ(back.graph_parameter_count, same.graph_parameter_count);
  EXPECT_EQ(back.graph_forward_flops, same.graph_forward_flops);
  EXPECT_EQ(parse(profile_text(sample_profile())).graph_parameter_count, 0);
}

TEST(Profile, RoundTripsExactly) {
  const Profile original = sample_profile();
  const Profile back = parse(profile_text(original));
  EXPECT_EQ(back.device_name, original.device_name);
  EXPECT_EQ(back.batch_size, original.batch_size);
  EXPECT_EQ(back.link.latency_s, original.link.latency_s);
  EXPECT_EQ(back.link.bandwidth_bytes_per_s, original.link.bandwidth_bytes_per_s);
  ASSERT_EQ(back.nodes.size(), original.nodes.size());
  for (size_t i = 0; i < back.nodes.size(); ++i) {
    EXPECT_EQ(back.nodes[i].name, original.nodes[i].name);
    EXPECT_EQ(back.nodes[i].forward_s, original.nodes[i].forward_s);
    EXPECT_EQ(back.nodes[i].backward_s, original.nodes[i].backward_s);
    // Written only where known: the node line has a fifth field then, else four.
    EXPECT_EQ(std::isnan(back.nodes[i].backward_input_s),
              std::isnan(original.nodes[i].backward_input_s));
    if (!std::isnan(original.nodes[i].backward_input_s)) {
      EXPECT_EQ(back.nodes[i].backward_input_s, original.nodes[i].backward_input_s);
    }
  }
  EXPECT_NE(profile_text(original).find("node\tn0\t1e-04\t2e-04\t5e-05\n"), std::string::npos)
      << profile_text(original);
  Profile infinite_link = original;
  infinite_link.link.bandwidth_bytes_per_s = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(std::isinf(parse(profile_text(infinite_link)).link.bandwidth_bytes_per_s));
}

TEST(Profile, HostSharingRoundTripsAndIsChecked) {
  Profile profile;
  profile.device_name = "cpu";
  profile.host_sharing.slowdown[2] = {1.05, 1.3};
  profile.host_sharing.slowdown[3] = {1.1, 1.4, 1.75};
  std::stringstream text;
  write_profile(text, profile);
  const Profile back = read_profile(text);
  EXPECT_EQ(back.host_sharing.slowdown, profile.host_sharing.slowdown);
  EXPECT_DOUBLE_EQ(back.host_sharing.factor(3, 2), 1.4);
  EXPECT_DOUBLE_EQ(back.host_sharing.factor(4, 2), 1.0);  // not measured for 4 ranks
  const std::string head =
      "format\tinterplace-profile\t1\ndevice\tcpu\nbatch_size\t1\nlink_latency_s\t0\n"
      "link_bandwidth_bytes_per_s\t1\nnode_count\t0\n";
  for (const char* bad : {"host_sharing\t2\t1.0\n", "host_sharing\t2\t1\t0\n", "host_sharing\t0\n",
                          "host_sharing\t2\t1\tx\n", "host_sharing\t1\t1\nhost_sharing\t1\t1\n"}) {
    std::istringstream in(head + std::string(bad));
    EXPECT_THROW(read_profile(in), Error) << bad;
  }
}

TEST(Profile, InterNodeLinkRoundTripsAndNeedsAllThreeKeys) {
  Profile two_nodes = sample_profile();
  two_nodes.link.devices_per_node = 2;
  two_nodes.link.inter_node_latency_s = 5e-5;
  two_nodes.link.inter_node_bandwidth_bytes_per_s = 1.25e9;
  const std::string text = profile_text(two_nodes);
  const Profile back = parse(text);
  EXPECT_EQ(back.link.devices_per_node, 2);
  EXPECT_EQ(back.link.inter_node_latency_s, 5e-5);
  EXPECT_EQ(back.link.inter_node_bandwidth_bytes_per_s, 1.25e9);
  // One node: none of the keys is written, and the link is single-level.
  EXPECT_EQ(profile_text(sample_profile()).find("devices_per_node"), std::string::npos);
  EXPECT_FALSE(parse(profile_text(sample_profile())).link.multi_node());
  // Two of the three keys: refused.
  std::string partial = text;
  const size_t at = partial.find("devices_per_node\t2\n");
  ASSERT_NE(at, std::string::npos) << text;
  partial.erase(at, std::string("devices_per_node\t2\n").size());
  EXPECT_NE(parse_error(partial).find("all of devices_per_node"), std::string::npos);
  std::string zero = text;
  zero.replace(zero.find("devices_per_node\t2"), 18, "devices_per_node\t0");
  EXPECT_NE(parse_error(zero).find("devices_per_node must be between 1"), std::string::npos);
}

TEST(LinkSpec, PicksTheLinkByNode) {
  LinkSpec link;
  link.latency_s = 1e-6;
  link.bandwidth_bytes_per_s = 1e10;
  EXPECT_TRUE(link.same_node(0, 7));  // one node: every pair, the intra-node link
  EXPECT_DOUBLE_EQ(link.transfer_s(1000, 0, 7), 1e-6 + 1e-7);
  link.devices_per_node = 2;
  link.inter_node_latency_s = 1e-5;
  link.inter_node_bandwidth_bytes_per_s = 1e9;
  EXPECT_TRUE(link.same_node(0, 1));
  EXPECT_TRUE(link.same_node(2, 3));
  EXPECT_FALSE(link.same_node(1, 2));
  EXPECT_DOUBLE_EQ(link.transfer_s(1000, 0, 1), 1e-6 + 1e-7);
  EXPECT_DOUBLE_EQ(link.transfer_s(1000, 1, 2), 1e-5 + 1e-6);
  EXPECT_DOUBLE_EQ(link.transfer_s(1000, 3, 0), 1e-5 + 1e-6);
}

// The measured curve: linear between its points, the first point's time below it, the
// last one's plus the rest at the bandwidth above it; per link level.
TEST(LinkSpec, InterpolatesTheMeasuredCurve) {
  LinkSpec link;
  link.latency_s = 1e-6;
  link.bandwidth_bytes_per_s = 1e9;
  link.curve = {{1, 1e-6}, {1000, 2e-6}, {100000, 2e-5}};
  EXPECT_DOUBLE_EQ(link.transfer_s(1, 0, 1), 1e-6);
  EXPECT_DOUBLE_EQ(link.transfer_s(0, 0, 1), 1e-6);
  EXPECT_DOUBLE_EQ(link.transfer_s(1000, 0, 1), 2e-6);
  EXPECT_NEAR(link.transfer_s(500, 0, 1), 1e-6 + 499.0 / 999.0 * 1e-6, 1e-18);
  EXPECT_NEAR(link.transfer_s(50500, 0, 1), 2e-6 + 0.5 * 1.8e-5, 1e-15);
  EXPECT_DOUBLE_EQ(link.transfer_s(200000, 0, 1), 2e-5 + 100000 / 1e9);
  // The inter-node level has its own curve, or none.
  link.devices_per_node = 1;
  link.inter_node_latency_s = 1e-5;
  link.inter_node_bandwidth_bytes_per_s = 1e8;
  EXPECT_DOUBLE_EQ(link.transfer_s(1000, 0, 1), 1e-5 + 1000 / 1e8);
  EXPECT_DOUBLE_EQ(link.transfer_s(1000, 0, 0), 2e-6);
  link.inter_node_curve = {{1, 3e-6}, {1000, 4e-6}};
  EXPECT_DOUBLE_EQ(link.transfer_s(1000, 0, 1), 4e-6);
  // One point is no curve.
  link.curve = {{1, 5.0}};
  EXPECT_DOUBLE_EQ(link.transfer_s(1000, 0, 0), 1e-6 + 1000 / 1e9);
}

// The receiver's share of a message: on its curve (linear between points, the first's
// time below them, proportional beyond the last), nothing on one device, between hosts or
// without a curve; the rest of the transfer is in flight, never less than nothing.
TEST(LinkSpec, TheReceiversShareOfAMessage) {
  LinkSpec link{.latency_s = 1e-6, .bandwidth_bytes_per_s = 1e9};
  EXPECT_EQ(link.receive_cpu_s(1000, 0, 1), 0.0);
  EXPECT_DOUBLE_EQ(link.in_flight_s(1000, 0, 1), link.transfer_s(1000, 0, 1));
  link.receive_cpu = {{4, 3e-7}, {1004, 5e-7}};
  EXPECT_DOUBLE_EQ(link.receive_cpu_s(1, 0, 1), 3e-7);
  EXPECT_DOUBLE_EQ(link.receive_cpu_s(504, 0, 1), 4e-7);
  EXPECT_DOUBLE_EQ(link.receive_cpu_s(2008, 0, 1), 1e-6);
  EXPECT_EQ(link.receive_cpu_s(504, 1, 1), 0.0);
  EXPECT_DOUBLE_EQ(link.in_flight_s(504, 0, 1), 1e-6 + 504e-9 - 4e-7);
  link.receive_cpu = {{4, 3e-6}, {1004, 5e-6}};  // more than the whole transfer
  EXPECT_EQ(link.in_flight_s(504, 0, 1), 0.0);
  link.devices_per_node = 1;  // between hosts: not measured
  link.inter_node_bandwidth_bytes_per_s = 1e8;
  EXPECT_EQ(link.receive_cpu_s(504, 0, 1), 0.0);
  link.receive_cpu = {{4, 3e-6}};  // one point is no curve
  link.devices_per_node = 0;
  EXPECT_EQ(link.receive_cpu_s(504, 0, 1), 0.0);
}

TEST(Profile, LinkCurvesRoundTripAndAreChecked) {
  Profile profile = sample_profile();
  profile.link.curve = {{1, 5e-7}, {1024, 1e-6}, {1 << 20, 3e-4}};
  const Profile back = parse(profile_text(profile));
  ASSERT_EQ(back.link.curve.size(), 3u);
  EXPECT_EQ(back.link.curve[2].bytes, 1 << 20);
  EXPECT_EQ(back.link.curve[2].seconds, 3e-4);
  EXPECT_TRUE(back.link.inter_node_curve.empty());
  EXPECT_TRUE(back.link.receive_cpu.empty());
  profile.link.receive_cpu = {{4, 3e-6}, {1 << 20, 2e-4}};
  const Profile with_share = parse(profile_text(profile));
  ASSERT_EQ(with_share.link.receive_cpu.size(), 2u);
  EXPECT_EQ(with_share.link.receive_cpu[1].bytes, 1 << 20);
  EXPECT_EQ(with_share.link.receive_cpu[1].seconds, 2e-4);
  const std::string head = profile_text(sample_profile());
  for (const char* bad :
       {"link_curve\t4\t1e-6\nlink_curve\t4\t2e-6\n", "link_curve\t0\t1e-6\n", "link_curve\t4\n",
        "link_curve\t4\t-1\n", "inter_node_link_curve\t4\t1e-6\n",
        "link_receive_cpu\t8\t1e-6\nlink_receive_cpu\t4\t2e-6\n", "link_receive_cpu\t4\tnan\n"}) {
    EXPECT_THROW(parse(head + bad), Error) << bad;
  }
  profile.link.curve = {{8, 1e-6}, {4, 1e-6}};
  EXPECT_THROW(profile_text(profile), Error);
}

TEST(Profile, AuxHeadsRoundTripAndAreChecked) {
  Profile profile = sample_profile();
  profile.aux_heads["conv2d 8x128x4x4|linear 8x10"] = {1e-3, 2e-3};
  const Profile back = parse(profile_text(profile));
  ASSERT_EQ(back.aux_heads.size(), 1u);
  EXPECT_EQ(back.aux_heads.at("conv2d 8x128x4x4|linear 8x10"), std::make_pair(1e-3, 2e-3));
  const std::string head = profile_text(sample_profile());
  for (const char* bad : {"aux_head\tk\t1e-3\n", "aux_head\t\t1e-3\t1e-3\n",
                          "aux_head\tk\t-1\t1e-3\n", "aux_head\tk\t1\t1\naux_head\tk\t1\t1\n"}) {
    EXPECT_THROW(parse(head + bad), Error) << bad;
  }
  profile.aux_heads["bad\tkey"] = {1.0, 1.0};
  EXPECT_THROW(profile_text(profile), Error);
}

TEST(Profile, FileRoundTripAndMissingFile) {
  const auto path = std::filesystem::temp_directory_path() / "interplace_profile_test.tsv";
  write_profile_file(path, sample_profile());
  EXPECT_EQ(read_profile_file(path).nodes.size(), 4u);
  std::filesystem::remove(path);
  EXPECT_THROW(read_profile_file(path), Error);
}

TEST(Profile, ReadsCommentsBlankLinesAndCrLf) {
  const std::string text =
      "# comment\r\n\r\nformat\tinterplace-profile\t1\r\ndevice\tcpu\r\nbatch_size\t4\r\n"
      "node_count\t1\r\nlink_latency_s\t0\r\nlink_bandwidth_bytes_per_s\t1e9\r\n"
      "node\tfc\t1e-3\t2e-3\r\n";
  const Profile profile = parse(text);
  EXPECT_EQ(profile.device_name, "cpu");
  EXPECT_EQ(profile.batch_size, 4);
  EXPECT_DOUBLE_EQ(profile.nodes.at(0).backward_s, 2e-3);
}

TEST(Profile, MalformedFilesGiveLineNumberedErrors) {
  const std::string good = profile_text(sample_profile());
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  EXPECT_NE(parse_error("").find("empty file"), std::string::npos);
  EXPECT_NE(parse_error("device\tx\n").find("test.tsv:1: expected the format line"),
            std::string::npos);
  EXPECT_NE(parse_error(replaced("profile\t1", "profile\t2")).find("version '2'"),
            std::string::npos);
  EXPECT_NE(parse_error(replaced("batch_size\t1", "batch_size\tone")).find("test.tsv:4:"),
            std::string::npos);
  EXPECT_NE(parse_error(replaced("batch_size\t1", "batch_size\t0")).find("batch_size"),
            std::string::npos);
  EXPECT_NE(parse_error(replaced("\t0.1\t", "\t-0.1\t")).find("forward_s"), std::string::npos);
  EXPECT_NE(parse_error(replaced("\t0.1\t", "\tnan\t")).find("forward_s"), std::string::npos);
  EXPECT_NE(parse_error(replaced("\t0.1\t", "\t0.1x\t")).find("not a number"), std::string::npos);
  EXPECT_NE(parse_error(replaced("node\tn1", "node\tn0")).find("duplicate node 'n0'"),
            std::string::npos);
  EXPECT_NE(parse_error(replaced("device\t", "colour\t")).find("unknown key 'colour'"),
            std::string::npos);
  EXPECT_NE(parse_error(good + "device\tagain\n").find("appears twice"), std::string::npos);
  EXPECT_NE(parse_error(replaced("node_count\t4\n", "")).find("missing key 'node_count'"),
            std::string::npos);
  EXPECT_NE(parse_error(replaced("node_count\t4", "node_count\t5")).find("truncated"),
            std::string::npos);
  EXPECT_NE(parse_error(replaced("\t0.1\t0.3", "\t0.1")).find("4, 5 or 7 tab-separated fields"),
            std::string::npos);
  EXPECT_NE(parse_error(replaced("link_bandwidth_bytes_per_s\t", "link_bandwidth_bytes_per_s\t-"))
                .find("must be > 0"),
            std::string::npos);
  const std::string truncated = good.substr(0, good.rfind("node\t"));
  EXPECT_NE(parse_error(truncated).find("truncated"), std::string::npos);
}

TEST(Profile, WriterRejectsValuesTheFormatCannotHold) {
  std::ostringstream out;
  Profile tab_name = sample_profile();
  tab_name.nodes[0].name = "a\tb";
  EXPECT_THROW(write_profile(out, tab_name), Error);
  Profile negative = sample_profile();
  negative.nodes[1].backward_s = -1.0;
  EXPECT_THROW(write_profile(out, negative), Error);
  Profile duplicate = sample_profile();
  duplicate.nodes[1].name = "n0";
  EXPECT_THROW(write_profile(out, duplicate), Error);
  EXPECT_TRUE(out.str().empty());  // nothing half-written
}

}  // namespace
}  // namespace interplace::placement
