"""Runs a test command as it would run on a CPU without AVX-512 (issue #58: golden floats
and calibrations that held only on the machine they were made on).

    reduced_isa.py numpy  -- COMMAND...   numpy's dispatched kernels above AVX2 switched off
                                          (NPY_DISABLE_CPU_FEATURES); run by the analysis
                                          venv's Python, whose numpy it asks
    reduced_isa.py onednn -- COMMAND...   oneDNN capped at AVX2 (ONEDNN_MAX_CPU_ISA=AVX2)

Before the command runs, the cap is proven to hold: numpy must report every switched-off
feature as unavailable; oneDNN's verbose log of one convolution (the first argument of
COMMAND run with ``--gtest_filter=ONEDNN_PROBE``) must name the AVX2 ISA and no AVX-512
kernel. On a CPU with nothing above AVX2 the default run already is the reduced one: the
script says so and exits with SKIP (77), which CTest reports as skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys

SKIP = 77
ONEDNN_PROBE = "Shapes/Conv2dCases.ForwardMatchesNaiveReference/3x3_pad1"


def numpy_features_above_avx2() -> list[str]:
    """numpy's dispatch targets beyond AVX2 (x86-64-v4 and the AVX-512 groups) that this CPU
    has: the code paths an AVX2 machine never runs."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    return [f for f in __cpu_dispatch__
            if (f == "X86_V4" or f.startswith("AVX512")) and __cpu_features__.get(f)]


def numpy_env() -> dict[str, str] | None:
    features = numpy_features_above_avx2()
    if not features:
        return None
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES=" ".join(features))
    probe = ("from numpy._core._multiarray_umath import __cpu_features__ as f; "
             f"on = [n for n in {features!r} if f.get(n)]; "
             "print(' '.join(on)); raise SystemExit(1 if on else 0)")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"reduced_isa: NPY_DISABLE_CPU_FEATURES={env['NPY_DISABLE_CPU_FEATURES']} "
                 f"left on: {done.stdout.strip() or done.stderr.strip()}\n"
                 "HINT: this numpy does not honour the variable; the reduced-ISA run would "
                 "test nothing")
    print(f"reduced_isa: NPY_DISABLE_CPU_FEATURES={env['NPY_DISABLE_CPU_FEATURES']}", flush=True)
    return env


def cpu_has_avx512() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return any(line.startswith("flags") and " avx512f" in line for line in f)
    except OSError:
        return False


def onednn_env(command: list[str]) -> dict[str, str] | None:
    if not cpu_has_avx512():
        return None
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    done = subprocess.run([command[0], f"--gtest_filter={ONEDNN_PROBE}"],
                          env=dict(env, ONEDNN_VERBOSE="1"), capture_output=True, text=True)
    log = done.stdout + done.stderr
    isa = [line for line in log.splitlines() if ",info,cpu,isa:" in line]
    kernels = [line for line in log.splitlines() if ",exec,cpu," in line]
    if done.returncode != 0 or not isa or "AVX2" not in isa[0] or not kernels \
            or any("avx512" in line for line in kernels):
        sys.exit("reduced_isa: oneDNN did not run capped at AVX2 (ONEDNN_MAX_CPU_ISA=AVX2):\n"
                 + "\n".join((isa + kernels)[:6] or log.splitlines()[-6:])
                 + "\nHINT: a oneDNN older than 2.0 reads DNNL_MAX_CPU_ISA instead")
    print(f"reduced_isa: ONEDNN_MAX_CPU_ISA=AVX2 ({isa[0].split('isa:')[1]}, "
          f"{len(kernels)} probe kernels, none AVX-512)", flush=True)
    return env


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in ("numpy", "onednn") or argv[1] != "--":
        sys.exit(__doc__)
    mode, command = argv[0], argv[2:]
    env = numpy_env() if mode == "numpy" else onednn_env(command)
    if env is None:
        print(f"reduced_isa: this CPU has nothing above AVX2 for {mode}: the default run of "
              "these tests already is the reduced-ISA one (skipped)")
        return SKIP
    return subprocess.run(command, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
