"""``compare BASE NEW``: did a change make configurations faster or slower?

Configurations are matched by ``config_key`` (their id; with repeats, the id of repeat
0, see :mod:`.loader`), so BASE and NEW may be two sweeps of one spec by two builds.
Per configuration present in both with ``ok`` runs:

* step time: ratio NEW / BASE of the medians over runs (each run: the median of its
  measured steps), below 1 is faster;
* throughput (``samples_per_s``): ratio NEW / BASE of the medians over runs, above 1 is
  faster;

each with a 95% bootstrap interval over runs and a two-sided permutation p-value
(:mod:`.stats`), Holm-adjusted over the rows of the table (separately per metric), and a
verdict by :func:`.stats.verdict`: ``faster``/``slower`` (at least ``MIN_RUNS`` runs per
side, Holm p < 0.05, the interval wholly beyond the minimum effect ``min_effect``),
``same`` (``same (faster, within 5%)`` when significant but smaller), or ``not enough
runs (n=... vs ...)``. The output states the minimum effect, so that a reader of a
``same`` knows what it rules out.

Per *family*, here a (model, strategy label) pair: the geometric mean over the
family's matched configurations of the same ratios, with a joint bootstrap (every
configuration's runs resampled on both sides together), Holm over the family rows.

Configurations in only one of the two files, or without ``ok`` runs in one of them, are
listed with where they are.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import stats
from .loader import Results
from .render import Table, format_value, to_markdown, write_table

FAMILY_KEY = ["model", "strategy_label"]
CONFIG_COLUMNS = ["config_key", "name", "model", "strategy_label", "runs_base", "runs_new",
                  "step_base_s", "step_new_s", "step_ratio", "step_ci_low", "step_ci_high",
                  "step_p_holm", "step_verdict", "throughput_base", "throughput_new",
                  "throughput_ratio", "throughput_ci_low", "throughput_ci_high",
                  "throughput_p_holm", "throughput_verdict", "method"]
FAMILY_COLUMNS = FAMILY_KEY + ["configurations", "min_runs", "step_ratio", "step_ci_low",
                               "step_ci_high", "step_p_holm", "step_verdict",
                               "throughput_ratio", "throughput_ci_low", "throughput_ci_high",
                               "throughput_p_holm", "throughput_verdict", "method"]
UNMATCHED_COLUMNS = ["config_key", "name", "where", "status"]


@dataclass
class Comparison:
    configs: pd.DataFrame
    families: pd.DataFrame
    unmatched: pd.DataFrame
    base: str
    new: str
    min_effect: float = stats.MIN_EFFECT
    notes: list[str] = field(default_factory=list)

    def tables(self) -> list[Table]:
        show = ["name", "runs_base", "runs_new", "step_ratio", "step_ci_low", "step_ci_high",
                "step_verdict", "throughput_ratio", "throughput_ci_low", "throughput_ci_high",
                "throughput_verdict"]
        fam = FAMILY_KEY + ["configurations", "min_runs", "step_ratio", "step_ci_low",
                            "step_ci_high", "step_verdict", "throughput_ratio",
                            "throughput_ci_low", "throughput_ci_high", "throughput_verdict"]
        return [
            Table("compare_configs", "Per configuration: NEW / BASE (n = runs per side)",
                  self.configs, show, "(no configuration in both files)"),
            Table("compare_families", "Per family (model, strategy): geometric mean of"
                                      " NEW / BASE", self.families, fam, "(none)"),
            Table("compare_unmatched", "Configurations in only one file (or not ok in one)",
                  self.unmatched, None, "(none: every configuration is in both)"),
        ]


class _Side:
    """The ``ok`` runs of one file by ``config_key``: positions into its columns, so that
    a configuration's runs are found without scanning the frame."""

    def __init__(self, results: Results, seed: int) -> None:
        ok = results.ok
        self.results = results
        self.seed = seed
        self.index = ok.groupby("config_key").indices if not ok.empty else {}
        cols = ("run_id", "step_time_s", "samples_per_s", "model", "strategy_label")
        self.cols = {c: ok[c].to_numpy() for c in cols} if not ok.empty else {}

    def runs(self, key: str) -> tuple[stats.Runs, stats.Runs]:
        pos = self.index[key]
        steps = self.results.lazy_step_times(self.cols["run_id"][pos], self.seed)
        return (stats.Runs(self.cols["step_time_s"][pos].astype(float), steps),
                stats.Runs(self.cols["samples_per_s"][pos].astype(float), steps,
                           inverse=True))


def _ratio_fields(prefix: str, est: stats.Estimate) -> dict:
    return {f"{prefix}_ratio": est.point, f"{prefix}_ci_low": est.low,
            f"{prefix}_ci_high": est.high, f"{prefix}_p": est.p}


def _apply_holm(frame: pd.DataFrame, estimates: dict[str, list[stats.Estimate]],
                min_effect: float) -> None:
    for prefix, lower in (("step", True), ("throughput", False)):
        ests = estimates[prefix]
        adjusted = stats.holm([e.p for e in ests])
        frame[f"{prefix}_p_holm"] = adjusted
        frame[f"{prefix}_verdict"] = [stats.verdict(e, p, lower_is_better=lower,
                                                    min_effect=min_effect)
                                      for e, p in zip(ests, adjusted)]


def compare_results(base: Results, new: Results, seed: int = 0, base_name: str = "BASE",
                    new_name: str = "NEW",
                    min_effect: float = stats.MIN_EFFECT) -> Comparison:
    """Per configuration and per family, NEW / BASE with intervals and verdicts
    (``min_effect``: the smallest change a verdict names, :func:`.stats.evidence`)."""
    bc, nc = base.configs, new.configs
    bkeys = set(bc["config_key"]) if not bc.empty else set()
    nkeys = set(nc["config_key"]) if not nc.empty else set()
    bside, nside = _Side(base, seed), _Side(new, seed)
    ball = bc.groupby("config_key").indices if not bc.empty else {}
    nall = nc.groupby("config_key").indices if not nc.empty else {}
    unmatched, rows, per_key = [], [], {}
    estimates: dict[str, list[stats.Estimate]] = {"step": [], "throughput": []}

    cols = {id(f): {c: f[c].to_numpy() for c in ("name", "status")} if not f.empty else {}
            for f in (bc, nc)}

    def statuses(frame: pd.DataFrame, pos: np.ndarray) -> str:
        return ", ".join(sorted(set(cols[id(frame)]["status"][pos])))
    for key in sorted(bkeys | nkeys):
        src, pos = (bc, ball[key]) if key in bkeys else (nc, nall[key])
        name = cols[id(src)]["name"][pos[0]]
        if key not in bkeys or key not in nkeys:
            where = f"only in {base_name}" if key in bkeys else f"only in {new_name}"
            unmatched.append({"config_key": key, "name": name, "where": where,
                              "status": statuses(src, pos)})
            continue
        if key not in bside.index or key not in nside.index:
            side = base_name if key not in bside.index else new_name
            src, pos = (bc, ball[key]) if key not in bside.index else (nc, nall[key])
            # Simulate-only configurations (the order study) have no measured steps to
            # compare: their tables are order-study's (docs/analysis.md).
            simulated = "simulate_only" in src and bool((src["simulate_only"].to_numpy()[pos]
                                                         == 1).any())
            where = (f"simulate-only in {side} (no measured steps)" if simulated
                     else f"no ok run in {side}")
            unmatched.append({"config_key": key, "name": name, "where": where,
                              "status": statuses(src, pos)})
            continue
        bs, bt = bside.runs(key)
        ns, nt = nside.runs(key)
        first = bside.index[key][0]
        seed_key = stats.seed_for(key, base=seed)
        es = stats.ratio(ns, bs, seed_key)
        et = stats.ratio(nt, bt, seed_key + 1)
        estimates["step"].append(es)
        estimates["throughput"].append(et)
        per_key[key] = (bs, bt, ns, nt)
        rows.append({"config_key": key, "name": name, "model": bside.cols["model"][first],
                     "strategy_label": bside.cols["strategy_label"][first], "runs_base": bs.n,
                     "runs_new": ns.n, "step_base_s": bs.point, "step_new_s": ns.point,
                     **_ratio_fields("step", es), "throughput_base": bt.point,
                     "throughput_new": nt.point, **_ratio_fields("throughput", et),
                     "method": es.method})
    configs = pd.DataFrame(rows, columns=CONFIG_COLUMNS + ["step_p", "throughput_p"])
    if rows:
        _apply_holm(configs, estimates, min_effect)
    families = _families(configs, per_key, seed, min_effect)
    notes = []
    if not configs.empty and (configs[["runs_base", "runs_new"]].min(axis=1)
                              < stats.MIN_RUNS).any():
        notes.append(f"configurations with fewer than {stats.MIN_RUNS} runs on a side get no"
                     " faster/slower verdict (run the sweep with repeats = 3 or more); their"
                     " intervals resample steps of one run (within-run jitter only)")
    return Comparison(configs=configs, families=families,
                      unmatched=pd.DataFrame(unmatched, columns=UNMATCHED_COLUMNS),
                      base=base_name, new=new_name, min_effect=min_effect, notes=notes)


def _geomean_ratio(m: list) -> np.ndarray:
    """Geometric mean of m[2i] / m[2i+1] (NEW / BASE per configuration). The logs are
    summed as they come (the order and values of ``sum`` over their list), not held: a
    family of 15,000 configurations would hold 15,000 x 2,000 of them."""
    total = 0
    for i in range(0, len(m), 2):
        total = total + np.log(m[i] / m[i + 1])
    return np.exp(total / (len(m) // 2))


def _families(configs: pd.DataFrame, per_key: dict, seed: int,
              min_effect: float) -> pd.DataFrame:
    if configs.empty:
        return pd.DataFrame(columns=FAMILY_COLUMNS)
    rows, estimates = [], {"step": [], "throughput": []}
    for key, g in configs.groupby(FAMILY_KEY, sort=True):
        sides_s, sides_t = [], []
        for k in g["config_key"]:
            bs, bt, ns, nt = per_key[k]
            sides_s += [ns, bs]
            sides_t += [nt, bt]
        sk = stats.seed_for(*key, base=seed)
        pairs = [(i, i + 1) for i in range(0, len(sides_s), 2)]
        es = stats.joint_estimate(sides_s, _geomean_ratio, sk, pairs=pairs)
        et = stats.joint_estimate(sides_t, _geomean_ratio, sk + 1, pairs=pairs)
        estimates["step"].append(es)
        estimates["throughput"].append(et)
        rows.append({**dict(zip(FAMILY_KEY, key)), "configurations": len(g),
                     "min_runs": es.min_runs, **_ratio_fields("step", es),
                     **_ratio_fields("throughput", et), "method": es.method})
    fam = pd.DataFrame(rows)
    _apply_holm(fam, estimates, min_effect)
    return fam.reindex(columns=FAMILY_COLUMNS + ["step_p", "throughput_p"])


def _jsonable(v: object) -> object:
    if isinstance(v, float | np.floating):
        return None if math.isnan(v) else float(v)
    if isinstance(v, np.integer):
        return int(v)
    return v


def rule_text(c: Comparison) -> str:
    """The verdict rule with this comparison's minimum effect, for every output format."""
    lo, hi = stats.band(c.min_effect)
    d = stats.effect_text(c.min_effect)
    return (f"verdicts: faster/slower only with >= {stats.MIN_RUNS} runs a side, Holm p <"
            f" {stats.ALPHA:g} and the 95% interval wholly outside [{lo:.4g}, {hi:.4g}]"
            f" (minimum effect {d}, --min-effect); a significant change short of it is"
            f" 'same (faster|slower, within {d})' or '... not shown beyond {d})'")


def to_json(c: Comparison) -> str:
    def records(df: pd.DataFrame) -> list[dict]:
        return [{k: _jsonable(v) for k, v in r.items()} for r in df.to_dict("records")]
    return json.dumps({"base": c.base, "new": c.new, "min_effect": c.min_effect,
                       "band": list(stats.band(c.min_effect)), "rule": rule_text(c),
                       "configurations": records(c.configs),
                       "families": records(c.families), "unmatched": records(c.unmatched),
                       "notes": c.notes}, indent=1)


def to_markdown_text(c: Comparison) -> str:
    parts = [f"# compare: NEW = {c.new} vs BASE = {c.base}", "", rule_text(c), ""]
    if c.notes:
        parts += ["Notes:", ""] + [f"- {n}" for n in c.notes] + [""]
    return "\n".join(parts + [to_markdown(t) for t in c.tables()])


def to_text(c: Comparison) -> str:
    out = [f"compare: NEW = {c.new} vs BASE = {c.base}",
           "ratios are NEW / BASE: step time below 1 and throughput above 1 are faster;"
           " [95% interval over runs]; n = runs per side", rule_text(c), ""]
    for t in c.tables():
        out.append(t.title)
        if t.frame.empty:
            out += [f"  {t.empty_text}", ""]
            continue
        cols = [x for x in (t.columns or list(t.frame.columns)) if x in t.frame]
        shown = t.frame[cols].apply(lambda s: s.map(format_value))
        out += ["  " + line for line in shown.to_string(index=False).splitlines()] + [""]
    out += [f"note: {n}" for n in c.notes]
    return "\n".join(out)


def write(c: Comparison, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for t in c.tables():
        files += write_table(t, out / "tables")
    (out / "compare.md").write_text(to_markdown_text(c), encoding="utf-8")
    (out / "compare.json").write_text(to_json(c), encoding="utf-8")
    return files + [out / "compare.md", out / "compare.json"]
