#!/usr/bin/env python3
"""Result files of runs with a validation split (run.sh, part 1) -> per run (strategy, seed) and
epoch the validation and test accuracy and loss, the mean training loss and the training
wall time; then the epoch the validation split selects, its test accuracy, and how far each
epoch is from the 30-epoch plateau measured without a validation split (93.05% and 92.88%,
results/2026-12-04-interlocking-plateau/).
    .venv/bin/python results/2026-12-04-interlocking-converge/curve.py FILE.h5... > curve.md"""
import sys

from interplace_analysis import load_results

PLATEAU_30_EPOCHS = (0.9305, 0.9288)  # seeds 1 and 2, mean of the last 3 of 30 epochs

results = load_results(sys.argv[1:])
if results.evaluations.empty or results.evaluations["validation_accuracy"].isna().all():
    sys.exit(f"curve.py: {' '.join(sys.argv[1:])}: no evaluations of a validation split")
low = min(PLATEAU_30_EPOCHS)
for _, run in results.ok.sort_values(["strategy_label", "seed"]).iterrows():
    ev = results.evaluations[results.evaluations["run_id"] == run["run_id"]].sort_values("epoch")
    curves = results.curves[results.curves["run_id"] == run["run_id"]].sort_values("step")
    print(f"## {run['strategy_label']}, seed {run['seed']}\n")
    print("| epoch | validation accuracy | test accuracy | validation loss | test loss "
          "| train loss | training wall, min |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    first = 0
    for _, e in ev.iterrows():
        in_epoch = curves[(curves["step"] >= first) & (curves["step"] <= e["step"])]
        first = e["step"] + 1
        wall = curves[curves["step"] <= e["step"]]["step_time_s"].sum()
        print(f"| {e['epoch']:g} | {100 * e['validation_accuracy']:.2f}% | "
              f"{100 * e['accuracy']:.2f}% | {e['validation_loss']:.4f} | {e['loss']:.4f} | "
              f"{in_epoch['loss'].mean():.4f} | {wall / 60:.1f} |")
    best = ev.loc[ev["validation_accuracy"].idxmax()]
    within = ev[ev["accuracy"] >= low - 0.01]["epoch"]
    print(f"\nselected by validation: epoch {best['epoch']:g} (validation "
          f"{100 * best['validation_accuracy']:.2f}%), test accuracy there "
          f"{100 * best['accuracy']:.2f}%; test accuracy of the last 3 epochs "
          f"{100 * ev['accuracy'].iloc[-3:].mean():.2f}%; end of training (whole test split) "
          f"{100 * run['eval_accuracy']:.2f}%; first epoch within 1 point of the 30-epoch "
          f"plateau's lower seed ({100 * low:.2f}%): "
          f"{within.iloc[0] if not within.empty else 'none'}; {len(curves)} steps, "
          f"median step {1e3 * run['step_time_s']:.0f} ms\n")
