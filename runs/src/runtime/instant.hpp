// The two clocks the runtime times its work with, read together: the wall clock (MPI_Wtime)
// and the CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID). The rank's main thread
// runs the kernels with --threads 1 on the CPU, so there its CPU time is the rank's compute
// whether or not other processes share its core, which the wall clock is not (ranks that
// time-share a core see each other's slices in their wall intervals). Worker threads of a
// multi-threaded kernel and a GPU's work are not in it (docs/runtime.md, "Records").
#pragma once

namespace interplace::runs {

struct Instant {
  double wall_s = 0.0;
  double cpu_s = 0.0;  // this thread's CPU seconds since it started
};

double thread_cpu_s();  // CLOCK_THREAD_CPUTIME_ID of the calling thread, seconds
Instant now();          // {wall_s(), thread_cpu_s()}

}  // namespace interplace::runs
