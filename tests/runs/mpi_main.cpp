// main() of the MPI tests: MPI around GoogleTest; only rank 0 prints results (every rank
// runs every test and fails the job through its exit status).
#include <gtest/gtest.h>
#include <mpi.h>

#include "interplace/runs/mpi_session.hpp"

int main(int argc, char** argv) {
  // As the commands start MPI: it also records the node-local ranks that pick GPUs.
  const interplace::runs::MpiSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int status = RUN_ALL_TESTS();
  // Every rank's verdict decides the job's.
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;  // the session finalises MPI
}
