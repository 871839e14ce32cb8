"""Every test that CMake registers at configure time runs with a temporary folder of its own.

    check_test_isolation.py CTEST BUILD_DIR

Reads the test list (`ctest --show-only=json-v1`) and fails naming each test whose
environment lacks TMPDIR=<BUILD_DIR>/test-tmp/<its name> (cmake/test_tmpdirs.cmake says why:
Open MPI's session folders under one shared TMPDIR raced between tests started at once).
The GoogleTest cases that gtest_discover_tests adds at build time run their executable
directly, never under an MPI launcher, and are not required to have one.
"""
import json
import os
import subprocess
import sys


def main(ctest, build):
    listing = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"],
                             capture_output=True, text=True, check=True)
    tests = json.loads(listing.stdout)["tests"]
    launchers = ("mpirun", "mpiexec", "orterun", "srun")
    problems, checked, discovered = [], 0, 0
    for test in tests:
        name, command = test["name"], test.get("command", [])
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        env = dict(e.split("=", 1) for e in props.get("ENVIRONMENT", []) if "=" in e)
        if "--gtest_also_run_disabled_tests" in command:  # added by gtest_discover_tests
            discovered += 1
            if any(os.path.basename(c) in launchers for c in command):
                problems.append(f"{name}: a discovered GoogleTest case under an MPI launcher")
            continue
        checked += 1
        want = os.path.join(build, "test-tmp", name)
        if os.path.realpath(env.get("TMPDIR", "")) != os.path.realpath(want):
            problems.append(f"{name}: TMPDIR is {env.get('TMPDIR', '(unset)')!r}, not {want!r}")
        elif not os.path.isdir(want):
            problems.append(f"{name}: its TMPDIR {want} does not exist")
    print(f"{checked} tests with a TMPDIR of their own checked, {discovered} discovered "
          "GoogleTest cases exempt")
    if checked == 0:
        problems.append("no test registered at configure time was found")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
