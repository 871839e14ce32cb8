"""The configuration schema a result file carries (schema.py): the analysis takes the
pipelines and the parameter names from it, so a pipeline added to the registry appears in
its tables with no edit of the analysis; files without it read with the legacy schema."""

from __future__ import annotations

import json
import math

import pytest
from resultfile import Cfg, write_result_file

from interplace_analysis import load_results
from interplace_analysis import schema as schemas
from interplace_analysis import strategy_study as study
from interplace_analysis.export import write_tables
from interplace_analysis.exported import from_results, read_export_directory


def _field(key, rank, kind="string", values=None, attribute=None):
    return {"key": key, "plural": "", "kind": kind, "values": values, "default": "",
            "in_id": "always", "id_rank": rank, "attribute": attribute or key,
            "in_file": "always"}


# What a newer interplace's `interplace schema` could print: a pipeline the analysis has
# never heard of ("dualpipev", between 1f1b and zb-h1 in the registry) and a new key.
FUTURE = {
    "fields": [*[dict(f, plural="", default="") for f in schemas.LEGACY_SCHEMA.fields],
               _field("overlap_factor", 50, "number")],
    "pipelines": [{"name": "gpipe", "title": "GPipe"}, {"name": "1f1b", "title": "1F1B"},
                  {"name": "dualpipev", "title": "DualPipeV"},
                  {"name": "zb-h1", "title": "ZB-H1"}],
}


def _runs(tmp_path, root=None):
    cfgs = [Cfg(strategy=strategy, pipeline=pipeline, devices=2, seed=seed,
                index=3 * i + seed, micro_batches=micro, eval_accuracy=0.8 + 0.01 * i,
                evaluations=[(1.0, 3, 1.0, 0.7 + 0.01 * i, 64),
                             (2.0, 7, 0.5, 0.8 + 0.01 * i, 64)])
            for i, (strategy, pipeline, micro) in enumerate(
                (("local", "gpipe", 4), ("global", "dualpipev", 4), ("global", "1f1b", 4),
                 ("global", "e2e", 1)))
            for seed in (1, 2)]
    return load_results([write_result_file(tmp_path / "f.h5", cfgs, root=root)])


def test_a_pipeline_new_to_the_analysis_reads_from_the_files_schema(tmp_path):
    results = _runs(tmp_path, root={"schema": json.dumps(FUTURE)})
    assert results.schema.source == "file"
    assert results.schema.pipeline_names() == ("gpipe", "1f1b", "dualpipev", "zb-h1")
    # The registry's order: e2e, the pipelines as the schema lists them, then by reach.
    runs = study._runs(from_results(results))
    labels = list(dict.fromkeys(runs["strategy_label"]))
    assert labels == ["e2e", "global/1f1b", "global/dualpipev", "local"]
    # The time-to-target table takes the new pipeline as a global schedule: a step time
    # alone gives it a row from another global pipeline's curve, and it can be the best.
    times = {"e2e": 1.0, "local": 0.5, "global/1f1b": 0.8, "global/dualpipev": 0.6,
             "global/zb-h1": 0.4}
    order = study.label_order(from_results(results))
    t = study.time_to_target_table(runs, results.evaluations, results.curves, "resnet20",
                                   times, "sim", window=2, order=order).frame
    t = t.set_index("strategy")
    assert t.loc["global/dualpipev", "curve"] == "global/dualpipev"
    assert t.loc["global/zb-h1", "curve"] == "global/1f1b"  # no runs: 1F1B's steps
    assert t.loc["global/zb-h1", "time_vs_best_global"] == pytest.approx(1.0)
    assert t.loc["global/dualpipev", "time_vs_best_global"] > 1.0
    # The report builds with it, in the same order.
    report = study.build_for_results(results)
    accuracy = next(tb for tb in report.tables if tb.name.startswith("accuracy_"))
    assert list(accuracy.frame["strategy"]) == labels
    # A key the schema has is a column of the configs frame (NaN: the file lacks it).
    assert "overlap_factor" in results.configs.columns
    assert math.isnan(results.configs["overlap_factor"].iloc[0])
    # An export keeps the schema beside its tables, and reading it back keeps the order.
    write_tables(results, tmp_path / "out", "csv", ("configs", "evaluations"))
    back = read_export_directory(tmp_path / "out")
    assert back.schema.pipeline_names() == results.schema.pipeline_names()
    assert list(dict.fromkeys(study._runs(back)["strategy_label"])) == labels


def test_files_without_a_schema_read_with_the_legacy_one(tmp_path):
    results = _runs(tmp_path)
    assert results.schema is schemas.LEGACY_SCHEMA
    assert results.schema.source == "legacy"
    # The parameter columns of the files before the schema: the 21 of the format's table.
    assert results.schema.parameters() == (
        "model", "family", "order", "placer", "devices", "strategy", "pipeline",
        "interlock_mode", "micro_batches", "batch_size", "warmup_steps", "steps", "dataset",
        "eval_samples_requested", "optimizer", "learning_rate", "weight_decay", "seed",
        "device", "cost_device", "model_options")
    # A pipeline the legacy schema lacks still reads, after the ones it knows.
    labels = list(dict.fromkeys(study._runs(from_results(results))["strategy_label"]))
    assert labels == ["e2e", "global/1f1b", "local", "global/dualpipev"]


def test_files_of_two_schemas_read_with_their_union(tmp_path):
    newer = schemas.from_json(json.dumps(FUTURE))
    both = schemas.merged([schemas.LEGACY_SCHEMA, newer])
    assert both.source == "merged"
    assert both.pipeline_names() == ("gpipe", "1f1b", "zb-h1", "interleaved-1f1b",
                                     "looped-bfs", "dualpipev")
    assert "overlap_factor" in both.parameters()
