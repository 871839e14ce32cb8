"""Shared fixtures: result files written by :mod:`resultfile` into a temporary folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # resultfile
try:  # the editable install of scripts/install-deps; else the source tree
    import interplace_analysis  # noqa: F401
except ImportError:
    sys.path.insert(0, str(HERE.parent))

import resultfile  # noqa: E402
from interplace_analysis import load_results  # noqa: E402


@pytest.fixture(scope="session")
def fixture_file(tmp_path_factory) -> Path:
    return resultfile.write_fixture(tmp_path_factory.mktemp("fixture") / "sweep.h5")


@pytest.fixture(scope="session")
def results(fixture_file):
    return load_results([fixture_file])


@pytest.fixture(scope="session")
def report(results):
    from interplace_analysis.report import build_report
    return build_report(results, seed=0)


@pytest.fixture
def configs():
    """Fresh fixture configurations, for tests that modify them."""
    return resultfile.fixture_configs()
