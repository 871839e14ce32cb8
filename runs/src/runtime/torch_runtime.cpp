// train_torch: one PyTorch process per rank (importers/interplace_importers/torch_runtime.py)
// and its records read back into the runtime's TrainResult (torch_runtime.hpp).

#include "runtime/torch_runtime.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "interplace/kernels/failure.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "runtime/messenger.hpp"
#include "runtime/plan_support.hpp"
#include "runtime/record_gather.hpp"

extern char** environ;

namespace interplace::runs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The child's exit codes (torch_runtime.py's main).
constexpr int kExitInvalid = 2;
constexpr int kExitDiverged = 3;

void refuse(const std::string& what, const std::string& hint) {
  throw_invalid("runtime torch: " + what + ". HINT: " + hint);
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

// The interpreter with torch: INTERPLACE_TORCH_PYTHON, else Debian's /usr/bin/python3 (a
// pyenv or conda `python3` usually has no torch).
std::string torch_python() {
  return env_or("INTERPLACE_TORCH_PYTHON", "/usr/bin/python3");
}

std::string importers_dir() {
  return env_or("INTERPLACE_IMPORTERS_DIR", INTERPLACE_IMPORTERS_DIR);
}

// A private directory for this rank's job, plan and records; removed when the run ends.
class JobDir {
 public:
  JobDir() {
    std::string pattern = (fs::temp_directory_path() / "interplace-torch-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw_runtime("runtime torch: cannot make a directory under " +
                    fs::temp_directory_path().string() + ": " + std::strerror(errno));
    }
    path_ = pattern;
  }
  ~JobDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  JobDir(const JobDir&) = delete;
  JobDir& operator=(const JobDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// host:port of torch.distributed's TCP rendezvous: rank 0's processor name and a port the
// kernel had free a moment ago (INTERPLACE_TORCH_MASTER_ADDR overrides the host).
std::string rendezvous_address(MPI_Comm comm, int rank) {
  constexpr int kChars = 512;
  std::vector<char> address(kChars, '\0');
  if (rank == 0) {
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    check_mpi(MPI_Get_processor_name(host, &length), "MPI_Get_processor_name");
    int port = 0;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in bound{};
    bound.sin_family = AF_INET;
    bound.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t size = sizeof(bound);
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&bound), sizeof(bound)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) == 0) {
      port = ntohs(bound.sin_port);
    }
    if (fd >= 0) close(fd);
    const std::string text =
        env_or("INTERPLACE_TORCH_MASTER_ADDR", host) + ":" + std::to_string(port);
    std::snprintf(address.data(), kChars, "%s", port > 0 ? text.c_str() : "");
  }
  check_mpi(MPI_Bcast(address.data(), kChars, MPI_CHAR, 0, comm), "MPI_Bcast");
  if (address[0] == '\0') throw_runtime("runtime torch: rank 0 found no free TCP port");
  return address.data();
}

json job_json(const TrainPlan& plan, int rank, int size, const std::string& master,
              const std::string& plan_path, const std::string& records_path, int threads) {
  const TrainConfig& c = plan.config;
  std::vector<double> rates;
  for (int step = 0; step < c.warmup_steps + c.steps; ++step) {
    rates.push_back(config_learning_rate(c, step));
  }
  return json{{"graph_file", fs::absolute(c.graph_file).string()},
              {"plan", plan_path},
              {"rank", rank},
              {"world_size", size},
              {"master", master},
              {"batch_size", c.batch_size},
              {"micro_batches", c.micro_batches},
              {"warmup_steps", c.warmup_steps},
              {"steps", c.steps},
              {"learning_rates", rates},
              {"optimizer", placement::to_string(c.optimizer)},
              {"weight_decay", c.weight_decay},
              {"seed", c.seed},
              {"threads", threads},
              {"timeout_s", c.watchdog_s},
              {"records", records_path}};
}

// Runs `python -m MODULE ARGS...` to its end: its exit status (128 + signal when killed),
// its stderr in `log_path`.
int run_child(const std::string& module, const std::vector<std::string>& module_args,
              const std::string& log_path) {
  const std::string python = torch_python();
  std::vector<std::string> args = {python, "-m", module};
  args.insert(args.end(), module_args.begin(), module_args.end());
  std::vector<std::string> env;
  const std::string path_var = "PYTHONPATH=";
  std::string python_path = importers_dir();
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind(path_var, 0) == 0) {
      if (entry.size() > path_var.size()) python_path.append(":").append(entry, path_var.size());
    } else {
      env.push_back(entry);
    }
  }
  env.push_back(path_var + python_path);
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, python.c_str(), &files, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&files);
  if (spawned != 0) {
    throw_invalid("runtime torch: cannot run " + python + ": " + std::strerror(spawned) +
                  ". HINT: set INTERPLACE_TORCH_PYTHON to a Python with torch (Debian's "
                  "/usr/bin/python3 with python3-torch: scripts/install-deps)");
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw_runtime(std::string("runtime torch: waitpid: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// The child's last lines of stderr (its error), at most ~2 kB.
std::string log_tail(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  constexpr size_t kTail = 2000;
  if (text.size() > kTail) text = "..." + text.substr(text.size() - kTail);
  return text.empty() ? "(no message)" : text;
}

double number_or_nan(const json& value) {
  return value.is_number() ? value.get<double>() : kNaN;
}

// This rank's records (torch_runtime.py writes one JSON object per step, then a summary),
// checked against the plan: every step, and its actions the rank's list.
LocalRecords read_records(const std::string& path, const TrainPlan& plan, int rank,
                          double* measured_wall_s) {
  const TrainConfig& c = plan.config;
  const std::vector<std::string>& actions = plan.torch_plan->actions[static_cast<size_t>(rank)];
  LocalRecords local;
  local.stages_with_head = plan.schedule.has_aux_head;
  std::ifstream in(path);
  std::string line;
  bool summary = false;
  while (std::getline(in, line)) {
    const json r = json::parse(line, nullptr, false);
    if (r.is_discarded() || !r.is_object()) {
      throw_runtime("runtime torch: rank " + std::to_string(rank) + ": a bad record line in " +
                    path);
    }
    if (r.contains("measured_wall_s")) {
      *measured_wall_s = r.at("measured_wall_s").get<double>();
      local.device_name = r.value("device_name", "cpu (torch)");
      summary = true;
      continue;
    }
    if (r.at("step").get<size_t>() != local.ranks.size() ||
        r.at("actions").get<std::vector<std::string>>() != actions) {
      throw_runtime("runtime torch: rank " + std::to_string(rank) + ": step " +
                    std::to_string(r.at("step").get<int>()) +
                    " did not execute the plan's action list in order");
    }
    RankStepRecord s;
    s.step_s = r.at("step_s").get<double>();
    s.forward_s = r.at("forward_s").get<double>();
    s.backward_s = r.at("backward_s").get<double>();
    s.optimizer_s = r.at("optimizer_s").get<double>();
    s.comm_wait_s = r.at("comm_wait_s").get<double>();
    s.idle_s = s.step_s - (s.forward_s + s.backward_s + s.optimizer_s);
    s.overhead_s = s.idle_s - s.comm_wait_s;
    s.step_cpu_s = r.at("step_cpu_s").get<double>();
    s.forward_cpu_s = r.at("forward_cpu_s").get<double>();
    s.backward_cpu_s = r.at("backward_cpu_s").get<double>();
    s.optimizer_cpu_s = r.at("optimizer_cpu_s").get<double>();
    s.bytes_sent = r.at("bytes_sent").get<int64_t>();
    s.peak_memory_bytes = r.at("peak_memory_bytes").get<int64_t>();
    local.ranks.push_back(s);
    local.loss.push_back(number_or_nan(r.at("loss")));
    local.accuracy.push_back(number_or_nan(r.at("accuracy")));
    local.aux_loss.push_back(kNaN);
    local.aux_accuracy.push_back(kNaN);
  }
  if (!summary || local.ranks.size() != static_cast<size_t>(c.warmup_steps + c.steps)) {
    throw_runtime("runtime torch: rank " + std::to_string(rank) + " wrote " +
                  std::to_string(local.ranks.size()) + " of " +
                  std::to_string(c.warmup_steps + c.steps) + " steps to " + path);
  }
  local.eval_loss = kNaN;
  local.eval_accuracy = kNaN;
  return local;
}

// Every rank learns whether a child failed; all throw the first failing rank's error.
void agree_on_failure(MPI_Comm comm, int rank, int size, int status, const std::string& log) {
  int first = status == 0 ? size : rank;
  int lowest = size;
  check_mpi(MPI_Allreduce(&first, &lowest, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (lowest == size) return;
  std::string message;
  int code = status;
  if (rank == lowest) {
    message = "rank " + std::to_string(rank) + ": runtime torch: " +
              (status > 128 ? "the PyTorch process was killed by signal " +
                                  std::to_string(status - 128) + "; "
                            : std::string()) +
              log_tail(log);
  }
  int length = static_cast<int>(message.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT, lowest, comm), "MPI_Bcast");
  check_mpi(MPI_Bcast(&code, 1, MPI_INT, lowest, comm), "MPI_Bcast");
  message.resize(static_cast<size_t>(length));
  check_mpi(MPI_Bcast(message.data(), length, MPI_CHAR, lowest, comm), "MPI_Bcast");
  if (code == kExitDiverged) throw Diverged(message, rank != lowest);
  throw Error(code == kExitInvalid ? ErrorKind::invalid_input : ErrorKind::runtime, message);
}

}  // namespace

void check_torch_runtime_config(const TrainConfig& c, const placement::Graph& graph) {
  const std::string hint_native = "runtime = \"native\" trains it with interplace's kernels";
  if (c.graph_file.empty()) {
    refuse("model '" + c.model + "' is interplace's own; PyTorch runs a module of yours",
           "graph_file of a network the importers wrote (python3 -m interplace_importers "
           "torchvision|module ...: docs/your-network.md), or " +
               hint_native);
  }
  if (c.dataset != DatasetKind::synthetic) {
    refuse("data set " + to_string(c.dataset) + ": the PyTorch runtime draws synthetic batches",
           "dataset = \"synthetic\", or " + hint_native);
  }
  if (c.strategy.kind != placement::StrategyKind::global) {
    refuse("strategy " + to_string(c.strategy) + ": PyTorch's pipelines backpropagate globally",
           "strategy = \"global\"");
  }
  if (c.data_parallel != 1 || c.device != kernels::Device::cpu) {
    refuse("data_parallel > 1 and device cuda are not built in the PyTorch runtime yet",
           "one replica on the CPU (gloo), or " + hint_native);
  }
  if (c.eval_samples > 0 || !c.eval_epochs.empty() || c.validation_fraction > 0.0 ||
      c.augmentation != Augmentation::none) {
    refuse("evaluation, validation splits and augmentation are not built in it yet",
           "eval_samples = 0, no eval_epochs, validation_fraction = 0, augmentation = "
           "\"none\"");
  }
  if (c.weight_decay > 0.0 && !c.weight_decay_all) {
    refuse(
        "weight decay on convolution and linear weights only is interplace's rule; "
        "torch.optim decays every parameter",
        "weight_decay_all = 1 (as torch.optim does), or weight_decay = 0");
  }
  if (graph.total_parameter_count() == 0) {
    refuse("graph '" + graph.name() + "' has no parameters to train", hint_native);
  }
}

TrainResult train_torch(const TrainPlan& plan, MPI_Comm comm, const StepCallback& on_step) {
  if (!plan.torch_plan) throw_runtime("runtime torch: the plan has no torch plan");
  int rank = 0, size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const JobDir dir;
  const std::string plan_path = dir.file("plan.json"), job_path = dir.file("job.json"),
                    records_path = dir.file("records.jsonl"), log_path = dir.file("stderr.txt");
  placement::write_torch_plan_file(plan_path, *plan.torch_plan);
  const std::string master = rendezvous_address(comm, rank);
  {
    std::ofstream job(job_path);
    job << job_json(plan, rank, size, master, plan_path, records_path,
                    rank_threads(plan.config, comm))
               .dump();
    if (!job) throw_runtime("runtime torch: cannot write " + job_path);
  }
  const int status = run_child("interplace_importers.torch_runtime", {job_path}, log_path);
  agree_on_failure(comm, rank, size, status, log_path);

  double measured_wall_s = 0.0;
  const LocalRecords local = read_records(records_path, plan, rank, &measured_wall_s);
  Messenger msg(comm, kernels::Device::cpu, plan.config.devices);
  msg.barrier();
  TrainResult result = gather_records(local, plan, msg);
  check_mpi(MPI_Bcast(&measured_wall_s, 1, MPI_DOUBLE, 0, comm), "MPI_Bcast");
  const TrainConfig& c = plan.config;
  result.measured_wall_s = measured_wall_s;
  result.samples_per_s =
      measured_wall_s > 0.0 ? static_cast<double>(c.steps * c.batch_size) / measured_wall_s : 0.0;
  result.eval_loss = kNaN;
  result.eval_accuracy = kNaN;
  result.eval_samples = 0;
  if (rank == 0 && on_step) {
    for (const StepRecord& step : result.steps) on_step(step);
  }
  return result;
}

std::string measure_torch_profile(const TrainConfig& config, int threads, MPI_Comm comm) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  std::string text, error;
  if (rank == 0) {
    try {
      const JobDir dir;
      const std::string out = dir.file("profile.tsv"), log_path = dir.file("stderr.txt");
      const int status =
          run_child("interplace_importers.torch_profile",
                    {config.graph_file, "--micro-batch",
                     std::to_string(config.micro_batch_samples()), "--threads",
                     std::to_string(threads), "--seed", std::to_string(config.seed), "--out", out},
                    log_path);
      if (status != 0) {
        error = "runtime torch: measuring the profile failed (exit " + std::to_string(status) +
                "): " + log_tail(log_path);
      } else {
        std::ifstream in(out);
        std::ostringstream read;
        read << in.rdbuf();
        text = "# measured by interplace for " + config.model +
               " (cost_device profile:auto, runtime torch: interplace_importers.torch_profile)\n" +
               read.str();
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  // The other ranks wait without spinning (Open MPI's blocking calls poll): a profile is
  // measured on cores they share.
  MPI_Request done = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(comm, &done), "MPI_Ibarrier");
  for (int finished = 0; !finished;) {
    check_mpi(MPI_Test(&done, &finished, MPI_STATUS_IGNORE), "MPI_Test");
    if (!finished) usleep(10000);
  }
  // Rank 0's failure reaches every rank through measure_on_every_rank (auto_profile.hpp).
  if (!error.empty()) throw_runtime(error);
  return text;
}

}  // namespace interplace::runs
