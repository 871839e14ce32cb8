// Helpers shared by the planning and training sides of the runtime (internal).
#pragma once

#include <cstdint>

#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/training.hpp"
#include "interplace/runs/weight_seeds.hpp"

namespace interplace::runs {

// Throws invalid_input unless the graph has exactly one input node and one sink (the
// logits), which is what the data sets feed and the loss reads.
void require_trainable_graph(const placement::Graph& graph);

// What the data set must feed: the graph's input sample, its logits' classes, and the
// token range of an embedding input.
SampleShape sample_shape(const placement::Graph& graph);

// The CPU threads of each rank: threads_per_rank, else the cores this process may use
// divided by the ranks of `comm` on its node (at least 1). Defined in train.cpp.
int rank_threads(const TrainConfig& config, MPI_Comm comm);

}  // namespace interplace::runs
