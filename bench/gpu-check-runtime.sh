# The runtime steps of bench/gpu-check (sourced by it; one concern per file): the MPI
# runtime's CUDA tests, training on the GPU under mpirun, the losses of the same run on the
# CPU and the GPU compared over 20 steps, a profile and a simulation from it, the transfer
# benchmark (host-staged against CUDA IPC), and a small sweep to HDF5 with its report. Uses gpu-check's step, note, to_file and its variables root, build, out, python,
# device (cuda, or cpu in a dry run) and dry_run.
# shellcheck shell=bash
# The variables come from gpu-check, which sources this file; failed is read there.
# shellcheck disable=SC2154,SC2034

runtime_steps() {
  local mpirun=${MPIEXEC:-$(command -v mpirun)}
  local interplace="$build/runs/interplace"
  if [[ -z $mpirun ]]; then
    note "runtime: not run, no mpirun (the unpacked Open MPI, or MPIEXEC)"
    failed=1
    return
  fi
  # Several ranks share the one GPU (and the cores): oversubscribing is intended.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  local np2=("$mpirun" --oversubscribe -np 2)
  # The model each training step uses: resnet20 at batch 64 in 4 micro-batches on the GPU;
  # a quarter-width, 8-pixel resnet20 in the dry run, which checks commands, not speed.
  local model=(--model resnet20 --batch-size 64 --micro-batches 4)
  local steps=20 sweep_overrides=() ctest_args=(-L cuda -E '^cuda\.' --no-tests=error)
  if ((dry_run)); then
    model=(--model resnet20 --width-multiplier 0.25 --image-size 8 --batch-size 8 --micro-batches 2)
    steps=3
    sweep_overrides=(device=cpu cost_device=cpu-core batch_size=8 steps=2)
    export OMP_NUM_THREADS=1
  fi

  # The CUDA tests of the MPI runtime (runs.mpi.cuda_*, 2 and 4 ranks); the kernel tests of
  # the label ran above as one binary (cuda_tests), so they are left out here.
  step mpi_cuda_tests 150 ctest --test-dir "$build" "${ctest_args[@]}" --output-on-failure \
    --output-junit "$out/mpi_cuda_tests.xml"
  if [[ -f $out/mpi_cuda_tests.log ]]; then
    grep -E 'tests passed|Skipped|Passed|Failed' "$out/mpi_cuda_tests.log" | sed 's/^/    /' |
      tee -a "$summary" > /dev/null
    # On the GPU machine a skipped GPU test did not run: a failure (the no-GPU test skips
    # there by design).
    if ((!dry_run)) && grep -qE 'cuda_matches_cpu.*Skipped' "$out/mpi_cuda_tests.log"; then
      note "mpi_cuda_tests: FAILED, runs.mpi.cuda_matches_cpu was skipped (no GPU seen by the ranks?)"
      failed=1
    fi
  fi

  # Training on the device: global with 1F1B, and pairwise, on 2 ranks; JSON lines per step.
  step "train_${device}_global_1f1b" 90 bash -c 'to_file "$@"' - \
    "$out/train_${device}_global_1f1b.jsonl" "${np2[@]}" "$interplace" train "${model[@]}" \
    --strategy global --pipeline 1f1b --steps "$steps" --device "$device" --format json
  step "train_${device}_pairwise" 90 bash -c 'to_file "$@"' - \
    "$out/train_${device}_pairwise.jsonl" "${np2[@]}" "$interplace" train "${model[@]}" \
    --strategy pairwise --steps "$steps" --device "$device" --format json
  # The same global/1F1B run on the CPU, and the losses of the two step by step: the first
  # two steps (the forward pass, the first update) to rounding, the rest to the trajectory
  # (bench/compare_losses.py says why). The CPU run once more on one rank (other thread
  # counts, so other summation orders) shows beside them how far rounding alone carries.
  step train_reference_cpu_global_1f1b 120 bash -c 'to_file "$@"' - \
    "$out/train_reference_cpu_global_1f1b.jsonl" \
    "${np2[@]}" "$interplace" train "${model[@]}" --strategy global --pipeline 1f1b \
    --steps "$steps" --device cpu --format json &&
    step train_twin_cpu_global_1f1b 120 bash -c 'to_file "$@"' - \
      "$out/train_twin_cpu_global_1f1b.jsonl" "$interplace" train "${model[@]}" --strategy global \
      --pipeline 1f1b --steps "$steps" --device cpu --format json &&
    step losses_cpu_vs_gpu 30 bash -c 'to_file "$@"' - "$out/losses_cpu_vs_gpu.md" "$python" \
      "$root/bench/compare_losses.py" "$out/train_reference_cpu_global_1f1b.jsonl" \
      "$out/train_${device}_global_1f1b.jsonl" --min-steps "$steps" --strict-steps 2 \
      --twin "$out/train_twin_cpu_global_1f1b.jsonl" &&
    tail -n 1 "$out/losses_cpu_vs_gpu.md" | sed 's/^/    /' | tee -a "$summary"

  # The measured profile (node times on the device, the link between the two ranks) and the
  # simulator's step from it, to set beside the measured steps of train above. A profile
  # fits one model at one micro-batch size, so the sweep (two models) keeps the h200
  # preset; a sweep of this model alone would take cost_device = "profile:PATH".
  local profile="$out/profile_resnet20_${device}.tsv"
  rm -f "$profile"
  step profile 120 "${np2[@]}" "$interplace" profile "${model[@]}" --device "$device" \
    --out "$profile" &&
    step simulate_from_profile 30 bash -c 'to_file "$@"' - "$out/simulate_from_profile.json" \
      "$interplace" simulate "${model[@]}" --order topo --placer contiguous --devices 2 \
      --strategy global --pipeline 1f1b --profile "$profile" --format json

  # Device-to-device transfers between the two ranks, the runtime's host staging against
  # CUDA IPC, 64 KiB to 64 MiB (the IPC path is measured here; the runtime does not use it
  # yet). Needs a GPU: not in the dry run.
  if ((!dry_run)); then
    step transfer_gpu 90 bash -c 'to_file "$@"' - "$out/transfer_gpu.txt" "${np2[@]}" \
      "$build/bench/bench_transfer_gpu" && grep -v '^{' "$out/transfer_gpu.txt" | sed 's/^/    /'
  fi

  # A small sweep with device cuda to HDF5, inspected and reported.
  rm -f "$out/sweep.h5"
  step sweep 150 "${np2[@]}" "$interplace" sweep "$root/bench/gpu-sweep.toml" \
    "${sweep_overrides[@]}" --out "$out/sweep.h5" &&
    step inspect 30 bash -c 'to_file "$@"' - "$out/sweep_inspect.txt" "$interplace" inspect \
      "$out/sweep.h5" &&
    step report 120 env PYTHONPATH="$root/analysis${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg \
      "$python" -m interplace_analysis report "$out/sweep.h5" --out "$out/report"
}
