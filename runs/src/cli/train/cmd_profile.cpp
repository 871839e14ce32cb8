// interplace profile: times every node of a model on this process's device and the MPI
// link between world ranks 0 and 1, and writes the profile file (docs/profile-format.md)
// that `place` and `simulate` read with --profile. Rank 0 times the nodes and writes the
// file while the other ranks wait quietly; with one rank the link values are the device
// preset's, and the file says so.
#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/device_presets.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/profile.hpp"
#include "interplace/runs/devices.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/profiling.hpp"
#include "json_writer.hpp"
#include "model_options.hpp"
#include "placement_options.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {

Command add_profile_command(CLI::App& root);

namespace {

struct ProfileOptions {
  ModelSelection model;
  std::string out;
  int repeats = 5;
  int warmup = 2;
  int threads = 0;  // 0: the node's cores shared among its ranks
  std::string device = "cpu";
  int top = 10;
  uint64_t seed = kDefaultSeed;
  std::string preset;  // link values when there is no second rank
  std::string format;
  std::string clock = "wall";  // wall | cpu (NodeTimingOptions::cpu_time)
};

const std::vector<std::string> kClocks = {"wall", "cpu"};

const std::vector<std::string> kFormats = {"text", "json"};

using ProfileRun = MeasuredProfile;

std::string link_comment(const ProfileRun& run) {
  std::string text;
  if (run.link.measured) {
    text = "# link: measured by an MPI ping-pong between world ranks 0 and " +
           std::to_string(run.peers.intra) +
           " on one host (latency: half round trip of 1 B; bandwidth: " +
           format_bytes(static_cast<double>(run.link.samples.back().bytes)) +
           " / its half round trip)\n";
  } else {
    text =
        "# link: NOT measured (no second rank on rank 0's host to ping-pong with); the "
        "values are those of " +
        run.link_source + "\n";
  }
  if (run.inter_node.measured) {
    text += "# inter-node link: measured the same way between world ranks 0 and " +
            std::to_string(run.peers.inter) + " (another host); " +
            std::to_string(run.peers.devices_per_node) + " ranks per host\n";
  }
  return text;
}

void write_file(const ProfileOptions& o, const ProfileRun& run) {
  std::ostringstream text;
  // The file's batch_size is the micro-batch the nodes were timed at: what a run that
  // reads the profile must build its graph for (docs/profile-format.md).
  text << "# interplace profile "
       << (o.model.graph_file.empty() ? "--model " + o.model.model
                                      : "--graph-file " + o.model.graph_file)
       << " --batch-size " << o.model.options.batch_size << " --micro-batches "
       << o.model.micro_batches << " (nodes timed at micro-batch size " << run.profile.batch_size
       << "): median of " << o.repeats << " runs after " << o.warmup << " warm-up runs per node, "
       << run.threads << " CPU threads, "
       << (o.clock == "cpu" ? "thread CPU time (--clock cpu; runtime units by CPU time)"
                            : "wall clock")
       << "\n"
       << link_comment(run);
  placement::write_profile(text, run.profile);  // throws for values the format cannot hold
  std::ofstream file(o.out, std::ios::binary | std::ios::trunc);
  file << text.str();
  file.flush();
  if (!file) throw_runtime("cannot write the profile file " + o.out);
}

std::vector<size_t> slowest(const placement::Profile& profile, int top) {
  std::vector<size_t> index(profile.nodes.size());
  for (size_t i = 0; i < index.size(); ++i) index[i] = i;
  const auto cost = [&](size_t i) {
    return profile.nodes[i].forward_s + profile.nodes[i].backward_s;
  };
  std::stable_sort(index.begin(), index.end(),
                   [&](size_t a, size_t b) { return cost(a) > cost(b); });
  index.resize(std::min(index.size(), static_cast<size_t>(top)));
  return index;
}

double total(const placement::Profile& profile, bool backward) {
  double sum = 0.0;
  for (const placement::NodeTiming& n : profile.nodes) sum += backward ? n.backward_s : n.forward_s;
  return sum;
}

std::string profile_text(const ProfileOptions& o, const placement::Graph& graph,
                         const ProfileRun& run) {
  const placement::Profile& p = run.profile;
  const double forward = total(p, false), backward = total(p, true);
  std::string out = "profile of " + o.model.label() + " at micro-batch size " +
                    std::to_string(p.batch_size) + " (batch size " +
                    std::to_string(o.model.options.batch_size) + " / " +
                    plural(o.model.micro_batches, "micro-batch", "micro-batches") + ") on " +
                    p.device_name + ": median of " + plural(o.repeats, "run", "runs") +
                    " per node after " + std::to_string(o.warmup) + " warm-up runs\n";
  out += "nodes: " + format_count(graph.node_count()) + "; forward " + format_seconds(forward) +
         ", backward " + format_seconds(backward) + ", step " + format_seconds(forward + backward) +
         "\n";
  if (const std::string opaque = placement::opaque_summary(graph); !opaque.empty()) {
    out += "estimated, not measured: " + opaque +
           "; their times are FLOPs at the measured nodes' rate or bytes at the preset's "
           "bandwidth (docs/your-network.md); no calibration (the graph cannot train)\n";
  } else {
    out += "runtime on 1 rank, whole model (calibration): forward " +
           format_seconds(p.runtime_forward_s) + ", backward " +
           format_seconds(p.runtime_backward_s) + ", optimiser step " +
           format_seconds(p.runtime_optimizer_s) + " (" + "x" +
           format_fixed(p.runtime_forward_s / std::max(forward, 1e-300), 2) + " and " + "x" +
           format_fixed(p.runtime_backward_s / std::max(backward, 1e-300), 2) +
           " the per-node sums); the rest of its step (drawing the batch, bookkeeping) " +
           format_seconds(p.runtime_overhead_s) + "\n";
  }
  for (const auto& [m, times] : p.runtime_in_flight) {
    out += "  with " + std::to_string(m) + " micro-batches in flight, per micro-batch: forward x" +
           format_fixed(times.first / std::max(p.runtime_forward_s, 1e-300), 2) + ", backward x" +
           format_fixed(times.second / std::max(p.runtime_backward_s, 1e-300), 2) + "\n";
  }
  out += "link: latency " + format_seconds(p.link.latency_s) + ", bandwidth " +
         format_scaled(p.link.bandwidth_bytes_per_s, "B/s") + " (" +
         (run.link.measured
              ? "measured by ping-pong between world ranks 0 and " +
                    std::to_string(run.peers.intra) + " on one host"
              : "NOT measured: no second rank on rank 0's host; values of " + run.link_source) +
         ")\n";
  if (p.link.receive_cpu.size() >= 2) {
    const auto at = [&p](int64_t bytes) { return p.link.receive_cpu_s(bytes, 0, 1); };
    out += "receiving a message (the receiver's own time): " + format_seconds(at(4096)) +
           " at 4 KiB, " + format_seconds(at(int64_t{1} << 20)) + " at 1 MiB (the link's " +
           format_seconds(p.link.transfer_s(int64_t{1} << 20, 0, 1)) + ")\n";
  }
  if (p.host_sharing.empty()) {
    out += "host sharing: not measured (one rank on rank 0's host)\n";
  } else {
    out +=
        "host sharing (slowdown of the runtime's units while n of P ranks on one host "
        "compute at once):\n";
    for (const auto& [ranks, factors] : p.host_sharing.slowdown) {
      out += "  P = " + std::to_string(ranks) + ":";
      for (size_t n = 0; n < factors.size(); ++n) {
        out += " n=" + std::to_string(n + 1) + " x" + format_fixed(factors[n], 2);
      }
      out += "\n";
    }
  }
  if (p.link.multi_node()) {
    out += "inter-node link: latency " + format_seconds(p.link.inter_node_latency_s) +
           ", bandwidth " + format_scaled(p.link.inter_node_bandwidth_bytes_per_s, "B/s") +
           " (measured by ping-pong between world ranks 0 and " + std::to_string(run.peers.inter) +
           " on another host; " + std::to_string(p.link.devices_per_node) + " ranks per host)\n";
  }
  out += "written to " + o.out + "\n\nslowest nodes:\n";
  TextTable table({"node", "op", "forward", "backward", "share"}, {1});
  for (size_t i : slowest(p, o.top)) {
    const placement::NodeTiming& n = p.nodes[i];
    table.add_row(
        {n.name, graph.nodes()[i].op, format_seconds(n.forward_s), format_seconds(n.backward_s),
         format_percent((n.forward_s + n.backward_s) / std::max(forward + backward, 1e-300))});
  }
  out += table.str();
  for (const auto& [measurement, title] : {std::pair{&run.link, "ping-pong within the host"},
                                           std::pair{&run.inter_node, "ping-pong between hosts"}}) {
    if (!measurement->measured) continue;
    out += std::string("\n") + title + " (median half round trip):\n";
    TextTable pings({"bytes", "round trips", "half round trip", "bandwidth"});
    for (const PingPongSample& s : measurement->samples) {
      pings.add_row({format_count(s.bytes), std::to_string(s.iterations),
                     format_seconds(s.half_round_trip_s),
                     format_scaled(static_cast<double>(s.bytes) / s.half_round_trip_s, "B/s")});
    }
    out += pings.str();
  }
  return out;
}

std::string profile_json(const ProfileOptions& o, const placement::Graph& graph,
                         const ProfileRun& run) {
  const placement::Profile& p = run.profile;
  const std::vector<size_t> top = slowest(p, o.top);
  const std::string nodes = json_array(top, [&](size_t i) {
    return JsonObject()
        .string("name", p.nodes[i].name)
        .string("op", graph.nodes()[i].op)
        .number("forward_s", p.nodes[i].forward_s)
        .number("backward_s", p.nodes[i].backward_s)
        .str();
  });
  const std::string samples = json_array(run.link.samples, [](const PingPongSample& s) {
    return JsonObject()
        .integer("bytes", s.bytes)
        .integer("round_trips", s.iterations)
        .number("half_round_trip_s", s.half_round_trip_s)
        .str();
  });
  std::string sharing = "{";
  for (const auto& [ranks, factors] : p.host_sharing.slowdown) {
    sharing += (sharing.size() > 1 ? "," : "") + std::string("\"") + std::to_string(ranks) +
               "\":" + json_array(factors, [](double f) { return json_number(f); });
  }
  sharing += "}";
  JsonObject link;
  link.boolean("measured", run.link.measured).string("source", run.link_source);
  link.number("latency_s", p.link.latency_s)
      .number("bandwidth_bytes_per_s", p.link.bandwidth_bytes_per_s)
      .raw("ping_pong", samples)
      .raw("receive_cpu", json_array(p.link.receive_cpu, [](const placement::LinkPoint& point) {
             return JsonObject()
                 .integer("bytes", point.bytes)
                 .number("seconds", point.seconds)
                 .str();
           }));
  // The inter-node link: null on one host.
  std::string inter_node = "null";
  if (p.link.multi_node()) {
    inter_node =
        JsonObject()
            .integer("devices_per_node", p.link.devices_per_node)
            .integer("peer_rank", run.peers.inter)
            .number("latency_s", p.link.inter_node_latency_s)
            .number("bandwidth_bytes_per_s", p.link.inter_node_bandwidth_bytes_per_s)
            .raw("ping_pong", json_array(run.inter_node.samples,
                                         [](const PingPongSample& s) {
                                           return JsonObject()
                                               .integer("bytes", s.bytes)
                                               .integer("round_trips", s.iterations)
                                               .number("half_round_trip_s", s.half_round_trip_s)
                                               .str();
                                         }))
            .str();
  }
  return JsonObject()
             .string("model", o.model.label())
             .raw("model_options", model_options_json(o.model))
             .string("device", p.device_name)
             .integer("batch_size", o.model.options.batch_size)
             .integer("micro_batches", o.model.micro_batches)
             .integer("micro_batch_size", p.batch_size)  // the file's batch_size
             .unsigned_integer("seed", o.seed)
             .integer("threads", run.threads)
             .integer("ranks", run.ranks)
             .integer("repeats", o.repeats)
             .integer("warmup", o.warmup)
             .string("out", o.out)
             .integer("node_count", graph.node_count())
             .number("total_forward_s", total(p, false))
             .number("total_backward_s", total(p, true))
             .number("runtime_forward_s", p.runtime_forward_s)
             .number("runtime_backward_s", p.runtime_backward_s)
             .number("runtime_optimizer_s", p.runtime_optimizer_s)
             .number("runtime_overhead_s", p.runtime_overhead_s)
             .raw("host_sharing", sharing)
             .raw("slowest_nodes", nodes)
             .raw("link", link.str())
             .raw("inter_node_link", inter_node)
             .str() +
         "\n";
}

void check_options(const ProfileOptions& o) {
  require_format(o.format, kFormats);
  if (o.out.empty()) throw_invalid("--out is required: the profile file to write");
  if (o.repeats < 1) throw_invalid("--repeats must be >= 1, got " + std::to_string(o.repeats));
  if (o.warmup < 0) throw_invalid("--warmup must be >= 0, got " + std::to_string(o.warmup));
  check_thread_count("--threads", o.threads);
  if (std::find(kClocks.begin(), kClocks.end(), o.clock) == kClocks.end()) {
    throw_invalid("--clock must be wall or cpu, got '" + o.clock + "'");
  }
  if (o.clock == "cpu" && (o.threads != 1 || o.device != "cpu")) {
    throw_invalid(
        "--clock cpu times one thread's CPU time: it needs --threads 1 and --device "
        "cpu");
  }
  if (o.top < 1) throw_invalid("--top must be >= 1, got " + std::to_string(o.top));
  device_by_name(o.device);
  // Fail before minutes of timing, not after.
  const std::filesystem::path parent = std::filesystem::path(o.out).parent_path();
  std::error_code error;
  if (!parent.empty() && !std::filesystem::is_directory(parent, error)) {
    throw_runtime("cannot write the profile file " + o.out + ": no directory " + parent.string());
  }
}

std::string run_profile(const ProfileOptions& o) {
  // Every rank checks the input before MPI starts, so bad input fails alike everywhere.
  check_options(o);
  const placement::Graph graph = build_selected_model(o.model);
  const placement::DevicePreset& preset = placement::device_preset_by_name(
      o.preset.empty() ? placement::device_presets().front().name : o.preset);
  ProfileRequest request{
      .model = o.model.model,
      .graph_file = o.model.graph_file,
      .options = o.model.options,
      .repeats = o.repeats,
      .warmup = o.warmup,
      .threads = o.threads,
      .device = device_by_name(o.device),
      .seed = o.seed,
      .fallback_link = preset.link,
      .fallback_link_name = preset.name,
      .cpu_clock = o.clock == "cpu",
      .memory_bandwidth_bytes_per_s = preset.device.memory_bandwidth_bytes_per_s};
  request.options.batch_size = graph.batch_size();  // the micro-batch

  MpiSession mpi(nullptr, nullptr);
  const ProfileRun run = measure_profile(request, MPI_COMM_WORLD);
  if (mpi.world_rank() != 0) return "";  // rank 0 reports; the others print nothing
  write_file(o, run);
  return o.format == "json" ? profile_json(o, graph, run) : profile_text(o, graph, run);
}

}  // namespace

Command add_profile_command(CLI::App& root) {
  auto options = std::make_shared<ProfileOptions>();
  CLI::App* app = root.add_subcommand(
      "profile",
      "Measure per-node forward/backward times of a model on this device and the MPI link "
      "latency and bandwidth (ping-pong between ranks 0 and 1); write a profile file");
  add_model_options(*app, options->model);
  const char* group = "Profile";
  app->add_option("--out", options->out, "profile file to write (docs/profile-format.md)")
      ->group(group);
  app->add_option("--repeats", options->repeats, "timed runs per node (the median is kept)")
      ->capture_default_str()
      ->group(group);
  app->add_option("--warmup", options->warmup, "untimed runs per node before the timed ones")
      ->capture_default_str()
      ->group(group);
  app->add_option("--threads", options->threads,
                  "CPU threads (0: the node's cores divided among its ranks)")
      ->capture_default_str()
      ->group(group);
  app->add_option("--clock", options->clock,
                  "what a node's time is: wall (the wall clock) or cpu (the thread's CPU time, "
                  "for machines whose cores others share; needs --threads 1; the runtime units are "
                  "timed by CPU time too)")
      ->capture_default_str()
      ->group(group);
  app->add_option("--device", options->device,
                  "device to time on: " + join(device_names()) +
                      " (cuda: rank 0's GPU, by its place on the node)")
      ->capture_default_str()
      ->group(group);
  app->add_option("--top", options->top, "slowest nodes to list")
      ->capture_default_str()
      ->group(group);
  add_seed_option(*app, options->seed, "seed of the weights and random inputs")->group(group);
  std::string presets;
  for (const std::string& name : placement::device_preset_names())
    presets += (presets.empty() ? "" : ", ") + name;
  app->add_option("--device-preset", options->preset,
                  "link values to write when there is only one rank, and the device whose memory "
                  "the calibration run is planned against (on a GPU: its preset): " +
                      presets + " (default " + placement::device_presets().front().name + ")")
      ->group(group);
  add_format_option(*app, options->format, kFormats);
  set_example(*app,
              "interplace profile --model resnet20 --batch-size 32 --micro-batches 4 "
              "--out resnet20-b32-m4.profile");
  return {app, [options] { return run_profile(*options); }};
}

}  // namespace interplace::runs::cli
