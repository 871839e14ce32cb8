"""The configuration schema of the interplace that wrote a result file: its keys (the
parameter attributes of ``/configs/<id>``) and its pipeline registry.

A result file carries it as the root attribute ``schema``, the JSON of ``interplace
schema`` (docs/results-format.md, docs/cli.md). The analysis takes the parameter names and
the pipelines from there instead of keeping copies, so a pipeline added to the registry
(placement/src/pipelines.cpp) appears in its tables with no edit here.

Files written before the attribute existed get :data:`LEGACY_SCHEMA`: the names those
writers used, frozen, for those files only (``source`` says so).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SCHEMA_ATTRIBUTE = "schema"
# The schema beside the tables of ``export`` (its JSON, as the attribute holds it).
EXPORT_FILE = "schema.json"
# What the pipeline key names the unpipelined end-to-end pass (not a pipeline).
E2E = "e2e"


@dataclass(frozen=True)
class Schema:
    """``fields``: the schema's rows (dicts as ``interplace schema`` prints them);
    ``pipelines``: the registry's rows, in its order; ``source``: where it came from
    (``file``, ``legacy``, ``merged``)."""
    fields: tuple[dict[str, Any], ...]
    pipelines: tuple[dict[str, Any], ...]
    source: str

    def to_json(self) -> str:
        return json.dumps({"fields": list(self.fields), "pipelines": list(self.pipelines)})

    def field(self, key: str) -> dict[str, Any] | None:
        return next((f for f in self.fields if f["key"] == key), None)

    def pipeline_names(self) -> tuple[str, ...]:
        """The registry's pipelines, in its order (``e2e`` is none of them)."""
        return tuple(p["name"] for p in self.pipelines)

    def parameters(self) -> tuple[str, ...]:
        """The parameter attributes every configuration group has, as the configs frame's
        columns: ``model``, ``family`` (written beside the schema's rows), then the
        attributes of the rows that are always in the id and the file, in id order."""
        rows = sorted((f for f in self.fields
                       if f.get("in_id") == "always" and f.get("in_file") == "always"),
                      key=lambda f: f["id_rank"])
        names = [f["attribute"] for f in rows]
        if "model" in names:
            names.insert(names.index("model") + 1, "family")
        return tuple(dict.fromkeys(names))

    def number_parameters(self) -> frozenset[str]:
        return frozenset(f["attribute"] for f in self.fields if f.get("kind") == "number")

    def global_labels(self) -> tuple[str, ...]:
        """The global strategy's labels of the pipelines (``global/gpipe``, ...), in the
        registry's order."""
        return tuple(f"global/{name}" for name in self.pipeline_names())

    def label_order(self) -> tuple[str, ...]:
        """The strategy labels in reading order: the end-to-end baseline, each pipeline of
        the global strategy, then the other strategies' forms by growing reach and the same
        with interlock mode sum (``nwise:N`` stands for every N)."""
        strategy = self.field("strategy") or {}
        others = [v for v in (strategy.get("values") or ()) if v != "global"]
        summed = [f"{o}+sum" for o in others if o != "local"]
        return (E2E, *self.global_labels(), *others, *summed)


def from_json(text: str, source: str = "file") -> Schema:
    """The schema of ``interplace schema``'s JSON."""
    data = json.loads(text)
    return Schema(tuple(data["fields"]), tuple(data["pipelines"]), source)


def merged(schemas: list[Schema]) -> Schema:
    """The union of several files' schemas: the first's rows and pipelines, then any row or
    pipeline only a later one has (a file of a newer interplace), in its order."""
    if not schemas:
        return LEGACY_SCHEMA
    if len(schemas) == 1:
        return schemas[0]
    fields: dict[str, dict] = {}
    pipelines: dict[str, dict] = {}
    for s in schemas:
        for f in s.fields:
            fields.setdefault(f["key"], f)
        for p in s.pipelines:
            pipelines.setdefault(p["name"], p)
    sources = sorted({s.source for s in schemas})
    return Schema(tuple(fields.values()), tuple(pipelines.values()),
                  sources[0] if len(sources) == 1 else "merged")


def of_provenance(provenance: dict[str, Any]) -> Schema:
    """The schema a file's root attributes carry, else :data:`LEGACY_SCHEMA`."""
    text = provenance.get(SCHEMA_ATTRIBUTE)
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if not text:
        return LEGACY_SCHEMA
    return from_json(str(text))


# LEGACY: only for files written before the root attribute ``schema`` (2026-12-07). The
# parameter attributes and pipelines those writers knew, as they were; never extended (a
# newer file carries its own schema).
def _legacy_field(rank: int, key: str, kind: str = "string", values=None) -> dict[str, Any]:
    return {"key": key, "kind": kind, "values": values, "in_id": "always", "id_rank": rank,
            "attribute": "eval_samples_requested" if key == "eval_samples" else key,
            "in_file": "always"}


LEGACY_SCHEMA = Schema(
    fields=tuple(_legacy_field(rank, key, kind, values) for rank, (key, kind, values) in
                 enumerate((("model", "string", None), ("order", "string", None),
                            ("placer", "string", None), ("devices", "integer", None),
                            ("strategy", "string", ["global", "local", "pairwise", "nwise:N"]),
                            ("pipeline", "string", None), ("interlock_mode", "string", None),
                            ("micro_batches", "integer", None), ("batch_size", "integer", None),
                            ("warmup_steps", "integer", None), ("steps", "integer", None),
                            ("dataset", "string", None), ("eval_samples", "integer", None),
                            ("optimizer", "string", None), ("learning_rate", "number", None),
                            ("weight_decay", "number", None), ("seed", "integer", None),
                            ("device", "string", None), ("cost_device", "string", None),
                            ("model_options", "string", None)), start=1)),
    pipelines=tuple({"name": name} for name in
                    ("gpipe", "1f1b", "zb-h1", "interleaved-1f1b", "looped-bfs")),
    source="legacy")
