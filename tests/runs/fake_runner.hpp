// A stand-in for the runtime, to test the sweep driver and the result files without it.
// Planning is real (zoo, order, placer, step simulation: the same invalid_input reasons as
// the runtime's, e.g. a local strategy on a placement that is not a chain). Training is
// not: each step sleeps INTERPLACE_FAKE_STEP_S seconds (default 0.02) on every rank of the
// communicator and reports a loss that depends only on the configuration, so that sharded
// and unsharded sweeps can be compared. It fails on every rank, like the runtime's
// contract says, when `data_dir` holds a train-images-idx3-ubyte.gz that is not gzip.
#pragma once

#include "interplace/runs/sweep.hpp"

namespace interplace::runs::testing {

TrainPlan fake_plan(const TrainConfig& config);
TrainResult fake_train(const TrainPlan& plan, MPI_Comm comm);
std::string fake_profile(const TrainConfig& config, int threads, MPI_Comm comm);
SweepRunner fake_runner();

}  // namespace interplace::runs::testing
