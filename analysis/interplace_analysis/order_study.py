"""The traversal-order study's tables and figures from order-study files (issue 18).

``interplace order-study`` writes one HDF5 file per invocation (docs/results-format.md,
"Order-study files"): the rl placer's learned placement per model x devices x order x
seed. This module reads any number of them and answers the study's questions:

- which order is best per model and per family, with 95% intervals over the seeds;
- how much the order changes the result: the spread of the order means against the
  spread over seeds within an order, and the **Friedman test** (orders as treatments,
  seeds as blocks: every order of one seed starts from the same random placement and
  the same initial policy weights, so the design is a complete block design);
- which graph features (depth, width, branching, critical-path share) go with which
  order: Spearman's rank correlation over the models between a feature and an order's
  normalised step time.

Intervals are percentile bootstraps over seeds (10,000 resamples, seeded), resampling
seeds jointly across orders so that paired comparisons keep the pairing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from .h5file import ResultFormatError
from . import stats
from .render import Table, to_markdown, write_table

FORMAT_NAME = "interplace-order-study"
FORMAT_VERSIONS = (1,)
# The study's topo (networkx 2.4 topological_sort) is our topo-lifo: the reference order.
REFERENCE_ORDER = "topo-lifo"
RESAMPLES = 10_000
LEVEL = 0.95
FEATURES = ["depth", "max_width", "mean_branching_factor", "critical_path_cost_share",
            "node_count"]
SETTING = ["cost_device", "model", "devices"]
TIE = 1e-9  # relative difference of means below which two orders tie


@dataclass
class OrderStudy:
    runs: pd.DataFrame       # one row per run (ok and failed)
    models: pd.DataFrame     # one row per (cost_device, model): structural features
    baselines: pd.DataFrame  # one row per heuristic placement
    curves: dict = field(default_factory=dict)  # run key -> best-so-far step times
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    @property
    def ok(self) -> pd.DataFrame:
        return self.runs[self.runs["status"] == "ok"]


def _strings(values) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def _columns(group: h5py.Group) -> pd.DataFrame:
    frame = {}
    for name, ds in group.items():
        if ds.ndim != 1 or ds.attrs.get("CLASS") == b"DIMENSION_SCALE":
            continue
        data = ds[()]
        frame[name] = _strings(data) if data.dtype.kind in "OS" else data
    return pd.DataFrame(frame)


def load_order_study(paths) -> OrderStudy:
    """Reads order-study files; raises ResultFormatError for anything else."""
    runs, models, baselines, files, commands = [], [], [], [], []
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise ResultFormatError(f"{path}: no such file")
        try:
            f = h5py.File(path, "r")
        except OSError as e:
            raise ResultFormatError(f"{path}: not an HDF5 file ({e})") from None
        with f:
            name = f.attrs.get("format_name", b"")
            name = name.decode() if isinstance(name, bytes) else str(name)
            if name != FORMAT_NAME:
                raise ResultFormatError(f"{path}: not an order-study file (format_name "
                                        f"'{name}', expected '{FORMAT_NAME}')")
            version = int(f.attrs.get("format_version", -1))
            if version not in FORMAT_VERSIONS:
                raise ResultFormatError(f"{path}: order-study format version {version}; this "
                                        f"analysis reads {FORMAT_VERSIONS}")
            cost = f.attrs["cost_device"]
            cost = cost.decode() if isinstance(cost, bytes) else str(cost)
            # Profiles are per model: name them by their kind, not their path.
            cost = "cpu-profile" if cost.startswith("profile:") else cost
            r = _columns(f["runs"])
            if "episode_step_time_s" in f["runs"]:
                best = f["runs"]["best_so_far_step_time_s"][()]
                r["curve"] = list(best)
            else:
                r["curve"] = [np.array([])] * len(r)
            m = _columns(f["models"]).rename(columns={"name": "model"})
            b = _columns(f["baselines"])
            for frame in (r, m, b):
                frame["cost_device"] = cost
                frame["file"] = str(path)
            runs.append(r)
            models.append(m)
            baselines.append(b)
            files.append(str(path))
            cl = f.attrs.get("command_line", b"")
            commands.append(cl.decode() if isinstance(cl, bytes) else str(cl))
    if not runs:
        raise ResultFormatError("no order-study files given")
    runs_df = pd.concat(runs, ignore_index=True)
    models_df = pd.concat(models, ignore_index=True).drop_duplicates(["cost_device", "model"])
    fam = models_df.set_index(["cost_device", "model"])["family"]
    runs_df["family"] = [fam.get((c, m), "") for c, m in zip(runs_df["cost_device"],
                                                             runs_df["model"])]
    return OrderStudy(runs_df, models_df.reset_index(drop=True),
                      pd.concat(baselines, ignore_index=True), files=files, commands=commands)


# ---------------------------------------------------------------------------- statistics

def _matrix(ok: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """Orders and their step times [order, seed] over the seeds every order has."""
    wide = ok.pivot_table(index="order", columns="seed", values="step_time_s", aggfunc="first")
    wide = wide.dropna(axis=1)  # a seed counts only where every order finished it
    return list(wide.index), wide.to_numpy(dtype=float)


def _boot_index(seeds: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, seeds, size=(RESAMPLES, seeds))


def _interval(replicates: np.ndarray) -> tuple[float, float]:
    lo, hi = np.nanquantile(replicates, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(lo), float(hi)


def friedman(x: np.ndarray) -> tuple[float, float]:
    """Friedman chi-square and p over orders (rows) with seeds (columns) as blocks; NaN when
    fewer than 3 orders or 2 seeds, or when every order gave the same time in every seed."""
    from scipy import stats as st
    if x.shape[0] < 3 or x.shape[1] < 2 or np.all(x == x[:, :1]):
        return math.nan, math.nan
    res = st.friedmanchisquare(*x)
    return float(res.statistic), float(res.pvalue)


def order_table(study: OrderStudy, seed: int = 0) -> pd.DataFrame:
    """Per setting and order: seeds, mean step time with its interval, and ratio to the
    setting's best order (paired over seeds)."""
    rows = []
    for key, group in study.ok.groupby(SETTING, sort=True):
        orders, x = _matrix(group)
        if x.size == 0:
            continue
        rng = np.random.default_rng(seed)
        idx = _boot_index(x.shape[1], rng)
        means = x.mean(axis=1)
        boot = x[:, idx].mean(axis=2)  # [order, resample]
        best = int(np.argmin(means))
        ref = orders.index(REFERENCE_ORDER) if REFERENCE_ORDER in orders else None
        for i, order in enumerate(orders):
            lo, hi = _interval(boot[i])
            row = dict(zip(SETTING, key), family=group["family"].iloc[0], order=order,
                       seeds=x.shape[1], mean_ms=means[i] * 1e3, ci_low_ms=lo * 1e3,
                       ci_high_ms=hi * 1e3, min_ms=x[i].min() * 1e3,
                       seed_sd_ms=x[i].std(ddof=1) * 1e3 if x.shape[1] > 1 else math.nan,
                       vs_best=means[i] / means[best], relative=means[i] / means.mean(),
                       is_best=i == best)
            if ref is not None:
                ratio = boot[ref] / boot[i]
                row["speedup_vs_topo"] = means[ref] / means[i]
                row["speedup_low"], row["speedup_high"] = _interval(ratio)
            rows.append(row)
    return pd.DataFrame(rows)


def best_table(study: OrderStudy, seed: int = 0) -> pd.DataFrame:
    """Per setting: the best order, the runner-up, the advantage over topo-lifo with its
    interval, and the order effect (Friedman test, spread across vs within orders)."""
    rows = []
    for key, group in study.ok.groupby(SETTING, sort=True):
        orders, x = _matrix(group)
        if x.size == 0:
            continue
        rng = np.random.default_rng(seed)
        idx = _boot_index(x.shape[1], rng)
        means = x.mean(axis=1)
        rank = np.argsort(means, kind="stable")
        best, second = int(rank[0]), int(rank[1]) if len(rank) > 1 else int(rank[0])
        boot = x[:, idx].mean(axis=2)
        chi2, p = friedman(x)
        grand = x.mean()
        between = x.shape[1] * ((means - grand) ** 2).sum()
        total = ((x - grand) ** 2).sum()
        # Orders whose mean equals the best's (chains: every order gives one placement).
        tied = [orders[i] for i in rank if means[i] <= means[best] * (1 + TIE)]
        name = ("tie: all" if len(tied) == len(orders) else
                orders[best] if len(tied) == 1 else "tie: " + ",".join(tied))
        row = dict(zip(SETTING, key), family=group["family"].iloc[0], orders=len(orders),
                   seeds=x.shape[1], best_order=name, tied=len(tied), best_ms=means[best] * 1e3,
                   runner_up=orders[second],
                   best_vs_runner_up=means[second] / means[best],
                   friedman_chi2=chi2, friedman_p=p,
                   order_sd_ms=means.std(ddof=1) * 1e3 if len(orders) > 1 else math.nan,
                   seed_sd_ms=float(np.sqrt(x.var(axis=1, ddof=1).mean())) * 1e3
                   if x.shape[1] > 1 else math.nan,
                   # Below rounding noise every order gave the same times: no share.
                   order_share=between / total if total > (1e-9 * grand) ** 2 * x.size
                   else math.nan)
        lo, hi = _interval(boot[second] / boot[best])
        row["runner_up_low"], row["runner_up_high"] = lo, hi
        if REFERENCE_ORDER in orders:
            ref = orders.index(REFERENCE_ORDER)
            row["topo_ms"] = means[ref] * 1e3
            row["speedup_vs_topo"] = means[ref] / means[best]
            row["speedup_low"], row["speedup_high"] = _interval(boot[ref] / boot[best])
        rows.append(row)
    return pd.DataFrame(rows)


def family_table(study: OrderStudy, seed: int = 0) -> pd.DataFrame:
    """Per (cost device, family, devices) and order: the geometric mean over the family's
    models of the order's mean step time over the model's mean over all orders (1 = an
    average order; < 1 = faster), with an interval from resampling seeds jointly."""
    rows = []
    for key, group in study.ok.groupby(["cost_device", "family", "devices"], sort=True):
        per_model = []
        orders = None
        for _, g in group.groupby("model", sort=True):
            o, x = _matrix(g)
            if orders is None:
                orders = o
            if o != orders or x.size == 0:
                continue
            per_model.append(x / x.mean())
        if not per_model:
            continue
        seeds = min(x.shape[1] for x in per_model)
        per_model = [x[:, :seeds] for x in per_model]
        rng = np.random.default_rng(seed)
        idx = _boot_index(seeds, rng)
        point = np.exp(np.mean([np.log(x.mean(axis=1)) for x in per_model], axis=0))
        boot = np.exp(np.mean([np.log(x[:, idx].mean(axis=2)) for x in per_model], axis=0))
        best = float(np.min(point))
        for i, order in enumerate(orders):
            lo, hi = _interval(boot[i])
            rows.append(dict(cost_device=key[0], family=key[1], devices=key[2], order=order,
                             models=len(per_model), relative=point[i], ci_low=lo, ci_high=hi,
                             is_best=bool(point[i] <= best * (1 + TIE))))
    return pd.DataFrame(rows)


def feature_table(study: OrderStudy, best: pd.DataFrame) -> pd.DataFrame:
    """Per model: its structural features, the best order and how much order mattered."""
    feats = study.models[["cost_device", "model", "family", *FEATURES]]
    cols = ["cost_device", "model", "devices", "best_order", "speedup_vs_topo", "order_share",
            "friedman_p"]
    return feats.merge(best[cols], on=["cost_device", "model"], how="inner").sort_values(
        ["cost_device", "devices", "depth"])


def feature_correlations(study: OrderStudy, orders: pd.DataFrame) -> pd.DataFrame:
    """Spearman's rho over the models between each feature and each order's mean step time
    relative to the mean over the model's orders (per cost device and devices; 4+ models, 3+
    distinct values of each)."""
    from scipy import stats as st
    rows = []
    feats = study.models.set_index(["cost_device", "model"])
    for (cost, k, order), g in orders.groupby(["cost_device", "devices", "order"], sort=True):
        if len(g) < 4:
            continue
        for feature in FEATURES:
            x = [feats.loc[(cost, m), feature] for m in g["model"]]
            y = list(g["relative"])
            # Models where every order ties give y = 1 whatever the feature: with fewer
            # than 3 distinct values a rank correlation of +-1 says nothing.
            if len(set(x)) < 3 or len(set(np.round(y, 9))) < 3:
                continue
            res = st.spearmanr(x, y)
            rows.append(dict(cost_device=cost, devices=k, order=order, feature=feature,
                             models=len(g), spearman_rho=float(res.statistic),
                             p=float(res.pvalue)))
    out = pd.DataFrame(rows)
    if len(out):
        from .stats import holm
        out["p_holm"] = holm(out["p"].to_numpy())
    return out


def baseline_table(study: OrderStudy, orders: pd.DataFrame) -> pd.DataFrame:
    """The learned placement (mean over seeds, and best seed) beside the heuristics."""
    if study.baselines.empty:
        return pd.DataFrame()
    b = study.baselines.pivot_table(index=["cost_device", "model", "devices", "order"],
                                    columns="placer", values="step_time_s").reset_index()
    b.columns = [c if c in ("cost_device", "model", "devices", "order") else f"{c}_ms"
                 for c in b.columns]
    for c in b.columns:
        if c.endswith("_ms"):
            b[c] = b[c] * 1e3
    cols = ["cost_device", "model", "devices", "order", "mean_ms", "min_ms"]
    out = orders[cols].rename(columns={"mean_ms": "rl_mean_ms", "min_ms": "rl_best_seed_ms"})
    return out.merge(b, on=["cost_device", "model", "devices", "order"], how="left")


def wall_table(study: OrderStudy) -> pd.DataFrame:
    ok = study.ok
    g = ok.groupby(["cost_device", "model", "devices"], sort=True)
    return g.agg(runs=("placer_wall_s", "size"), episodes=("episodes_run", "median"),
                 median_wall_s=("placer_wall_s", "median"), total_wall_s=("placer_wall_s", "sum")
                 ).reset_index()


# ------------------------------------------------------------------------------- figures

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def heatmap(orders: pd.DataFrame, cost: str, k: int):
    """Models x orders, each cell the order's mean over the setting's best order."""
    plt = _plt()
    d = orders[(orders["cost_device"] == cost) & (orders["devices"] == k)]
    if d.empty:
        return None
    m = d.pivot_table(index="model", columns="order", values="vs_best")
    fig, ax = plt.subplots(figsize=(1.2 * m.shape[1] + 3, 0.45 * m.shape[0] + 1.8))
    im = ax.imshow(m.to_numpy(), cmap="viridis_r", aspect="auto")
    ax.set_xticks(range(m.shape[1]), m.columns, rotation=35, ha="right")
    ax.set_yticks(range(m.shape[0]), m.index)
    for (i, j), v in np.ndenumerate(m.to_numpy()):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize=7,
                    color="white" if v > (np.nanmin(m.to_numpy()) + np.nanmax(m.to_numpy())) / 2
                    else "black")
    fig.colorbar(im, ax=ax, label="mean step time / best order's")
    ax.set_title(f"rl placer, mean over seeds: order vs best ({cost}, K={k})")
    fig.tight_layout()
    return fig


def _model_grid(study: OrderStudy, cost: str, k: int, row_height: float):
    """The runs of one cost device and K, their models (sorted), and a figure with one
    panel per model, four per row, the spare panels hidden; None without runs."""
    plt = _plt()
    ok = study.ok
    d = ok[(ok["cost_device"] == cost) & (ok["devices"] == k)]
    models = sorted(set(d["model"]))
    if not models:
        return None
    cols = min(4, len(models))
    rows = math.ceil(len(models) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, row_height * rows), squeeze=False)
    for ax in list(axes.flat)[len(models):]:
        ax.axis("off")
    return d, models, fig, axes


def learning_curves(study: OrderStudy, cost: str, k: int):
    """Median over seeds of the best step time so far, per episode, per order and model."""
    grid = _model_grid(study, cost, k, row_height=2.6)
    if grid is None:
        return None
    d, models, fig, axes = grid
    for ax, model in zip(axes.flat, models):
        for order, g in d[d["model"] == model].groupby("order", sort=True):
            curves = np.array([np.asarray(c, dtype=float) for c in g["curve"]])
            if curves.size == 0:
                continue
            ax.plot(np.arange(1, curves.shape[1] + 1), stats.median(curves, axis=0) * 1e3,
                    label=order, lw=1)
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("episode", fontsize=8)
        ax.set_ylabel("best so far (ms)", fontsize=8)
        ax.tick_params(labelsize=7)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(7, len(labels)), fontsize=8)
    fig.suptitle(f"rl learning curves, median over seeds ({cost}, K={k})", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.96))
    return fig


def seeds_by_order(study: OrderStudy, cost: str, k: int):
    """Every seed's step time per order, per model (relative to the model's best mean)."""
    grid = _model_grid(study, cost, k, row_height=2.8)
    if grid is None:
        return None
    d, models, fig, axes = grid
    for ax, model in zip(axes.flat, models):
        g = d[d["model"] == model]
        orders = sorted(set(g["order"]))
        best = g.groupby("order")["step_time_s"].mean().min()
        for i, order in enumerate(orders):
            y = g[g["order"] == order]["step_time_s"].to_numpy() / best
            ax.plot(np.full(len(y), i) + np.linspace(-0.15, 0.15, len(y)), y, ".", ms=3)
            ax.plot([i - 0.25, i + 0.25], [y.mean()] * 2, "k-", lw=1)
        ax.set_xticks(range(len(orders)), orders, rotation=45, ha="right", fontsize=7)
        ax.set_title(model, fontsize=9)
        ax.set_ylabel("step / best mean", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"rl placer per seed (dots) and mean (bar) by order ({cost}, K={k})",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return fig


# -------------------------------------------------------------------------------- report

def build_tables(study: OrderStudy, seed: int = 0) -> list[Table]:
    orders = order_table(study, seed)
    best = best_table(study, seed)
    fams = family_table(study, seed)
    return [
        Table("order_study_best", "Best order per model (mean over seeds; intervals: 95% "
              "bootstrap over seeds; order effect: Friedman test, seeds as blocks)", best,
              ["cost_device", "model", "devices", "seeds", "best_order", "best_ms",
               "speedup_vs_topo", "speedup_low", "speedup_high", "runner_up",
               "best_vs_runner_up", "runner_up_low", "runner_up_high", "order_share",
               "friedman_p"]),
        Table("order_study_family", "Order per family: geometric mean over the family's "
              "models of mean step time / the model's mean over orders (< 1: faster)", fams,
              ["cost_device", "family", "devices", "order", "models", "relative", "ci_low",
               "ci_high", "is_best"]),
        Table("order_study_orders", "Step time per model and order (ms; speedup = topo-lifo / "
              "order)", orders,
              ["cost_device", "model", "devices", "order", "seeds", "mean_ms", "ci_low_ms",
               "ci_high_ms", "min_ms", "seed_sd_ms", "vs_best", "speedup_vs_topo"]),
        Table("order_study_spread", "How much order matters: SD of the order means vs SD over "
              "seeds within an order; order_share = between-order sum of squares / total",
              best, ["cost_device", "model", "devices", "orders", "seeds", "order_sd_ms",
                     "seed_sd_ms", "order_share", "friedman_chi2", "friedman_p"]),
        Table("order_study_features", "Graph features and the best order", 
              feature_table(study, best),
              ["cost_device", "model", "family", "devices", *FEATURES, "best_order",
               "speedup_vs_topo", "order_share", "friedman_p"]),
        Table("order_study_feature_correlations", "Spearman's rho over models: feature vs "
              "order's mean step time / the mean over the model's orders (negative: the order gains on deeper/wider/"
              "... graphs); p Holm-adjusted over all rows", feature_correlations(study, orders)),
        Table("order_study_baselines", "Learned placement vs heuristic placers (ms)",
              baseline_table(study, orders)),
        Table("order_study_wall", "rl placer wall time (s, on the machine that ran the study)",
              wall_table(study)),
    ]


def write_report(study: OrderStudy, out: Path, seed: int = 0, command: str = "") -> str:
    from .plots import save
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tables = build_tables(study, seed)
    lines = ["# Traversal-order study: the rl placer per order", ""]
    if command:
        lines += [f"Made with `{command}` from:", ""]
    for f, c in zip(study.files, study.commands):
        lines.append(f"- `{f}`: `{c}`")
    lines.append("")
    for i, t in enumerate(tables, 1):
        write_table(t, out / "tables")
        lines.append(to_markdown(t, f"Table {i}."))
    figs = []
    for cost, k in sorted(set(zip(study.ok["cost_device"], study.ok["devices"]))):
        for name, fn in (("heatmap", lambda: heatmap(tables[2].frame, cost, k)),
                         ("curves", lambda: learning_curves(study, cost, k)),
                         ("seeds", lambda: seeds_by_order(study, cost, k))):
            fig = fn()
            if fig is not None:
                path = save(fig, out / "plots" / f"order_study_{name}_{cost}_k{k}.png")
                figs.append(path)
                lines.append(f"![{name} {cost} K={k}](plots/{path.name})")
    text = "\n".join(lines) + "\n"
    (out / "report.md").write_text(text)
    return text
