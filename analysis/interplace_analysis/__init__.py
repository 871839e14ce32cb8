"""Analysis of interplace result files (docs/results-format.md).

The package turns the HDF5 files the sweep writes into tidy pandas tables
(:mod:`.frames`), the study tables (:mod:`.tables`), plots (:mod:`.plots`) and a
report directory (:mod:`.report`, ``python -m interplace_analysis report``).
"""

from .loader import FORMAT_NAME, FORMAT_VERSION, ResultFormatError, load_results

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "ResultFormatError", "load_results"]
__version__ = "0.1.0"
