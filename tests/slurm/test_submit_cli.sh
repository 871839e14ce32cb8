#!/usr/bin/env bash
# slurm.submit_cli: slurm/submit's checks, --dry-run and job chaining, without Slurm: a fake
# sbatch on PATH records its arguments and answers like `sbatch --parsable`, and a fake
# interplace answers `sweep SPEC --dry-run [--ranks N] --format json` (the planning check)
# with 5 configurations needing `devices` ranks (the spec's "devices = K" line, default 1),
# or with a spec error. Needs no root, takes about a second.
#   tests/slurm/test_submit_cli.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
submit=$(cd "$here/../.." && pwd)/slurm/submit

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
spec=$work/spec.toml
echo 'models = ["resnet20"]' >"$spec"
interplace=$work/interplace
cat >"$interplace" <<'EOF'
#!/usr/bin/env bash
# Fake interplace: only `sweep SPEC --dry-run [--ranks N] --format json`, as documented in
# docs/cli.md: 5 configurations with K = the spec's `devices = K` (default 1) devices.
[[ "$1" == sweep && " $* " == *" --dry-run "* && " $* " == *" --format json "* ]] \
  || { echo "fake: $*" >&2; exit 3; }
if grep -q bogus "$2"; then echo "$2:1: unknown key 'bogus'" >&2; exit 2; fi
k=$(sed -n 's/^devices = \([0-9]*\)$/\1/p' "$2"); k=${k:-1}
ranks=$k
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do [[ "${args[i]}" == --ranks ]] && ranks=${args[i + 1]}; done
run=5 skip=0 reasons='[]'
if ((ranks < k)); then
  run=0 skip=5 reasons="[{\"outcome\": \"would skip: needs $k ranks, the job has $ranks\", \"count\": 5}]"
fi
configs=""
for i in 0 1 2 3 4; do
  configs+="${configs:+,}{\"index\": $i, \"id\": \"000000000000000$i\", \"name\": \"c$i\", \"devices\": $k}"
done
echo "{\"selected\": 5, \"ranks\": $ranks, \"ranks_needed\": $k, \"would_run\": $run, \"would_skip\": $skip, \"would_fail\": 0, \"reasons\": $reasons, \"configs\": [$configs]}"
((run > 0)) || exit 2
EOF
chmod +x "$interplace"

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect STATUS PATTERN CMD...: CMD exits STATUS and its stdout+stderr matches PATTERN (grep -E).
expect() {
  local want=$1 pattern=$2; shift 2
  local got=0 output shown="$*"
  shown=${shown//$work/\$work}; shown=${shown//$PATH/...}
  output=$("$@" 2>&1) || got=$?
  if [[ "$got" != "$want" ]]; then
    fail "$shown exited $got, not $want; output: $output"
  elif ! grep -qE -- "$pattern" <<<"$output"; then
    fail "$shown: output lacks /$pattern/: $output"
  else
    echo "ok (exit $got): $shown"
  fi
}

# --- bad input ----------------------------------------------------------------------------
expect 2 'SPEC is required' "$submit" --out "$work/o"
expect 2 "cannot read the sweep specification '$work/nope.toml'" "$submit" "$work/nope.toml" --out "$work/o"
expect 2 '--out DIR is required' "$submit" "$spec"
expect 2 "--shards must be a positive integer, not '0'" "$submit" "$spec" --out "$work/o" --shards 0
expect 2 "--shards must be a positive integer, not 'two'" "$submit" "$spec" --out "$work/o" --shards two
expect 2 '--shards 20000 is more than 10000' "$submit" "$spec" --out "$work/o" --shards 20000
expect 2 "--gpus-per-task must be 0 or more" "$submit" "$spec" --out "$work/o" --gpus-per-task x
expect 2 "--launcher must be pmix, pmi2 or mpirun" "$submit" "$spec" --out "$work/o" --launcher ssh
expect 2 "unknown option '--bogus'" "$submit" "$spec" --out "$work/o" --bogus
expect 2 "'$work/nope' is not an executable file" "$submit" "$spec" --out "$work/o" --interplace "$work/nope"
expect 0 'usage: slurm/submit SPEC' "$submit" --help

# The spec check: a spec error, more shards than configurations, --no-check.
echo 'bogus = 1' >"$work/bad.toml"
expect 2 "bad.toml:1: unknown key 'bogus'" "$submit" "$work/bad.toml" --out "$work/o" --interplace "$interplace"
expect 2 '--shards 6 is more than the 5 configurations' "$submit" "$spec" --out "$work/o" --shards 6 --interplace "$interplace"
expect 0 '# spec: not checked' "$submit" "$work/bad.toml" --out "$work/o" --interplace "$interplace" --no-check --dry-run

# No sbatch: a PATH with only the tools submit needs besides sbatch.
mkdir -p "$work/bin-no-sbatch"
for tool in bash dirname readlink cmp cp mkdir grep wc python3 mktemp rm cat basename sed paste; do ln -s "$(command -v "$tool")" "$work/bin-no-sbatch/$tool"; done
expect 2 'sbatch not found' env PATH="$work/bin-no-sbatch" "$(command -v bash)" "$submit" "$spec" \
  --out "$work/o" --interplace "$interplace"

# --- dry run: the two commands, nothing created ---------------------------------------------
expect 0 "sbatch --parsable --job-name=interplace-spec --array=0-2%2 --nodes=2 --ntasks-per-node=4 --gpus-per-task=1 --time=01:00:00 --signal=B:USR1@300 --partition=gpu --account=proj .*sweep\\.sbatch --spec $work/dry/spec\\.toml --out $work/dry --shards 3 --interplace $interplace" \
  "$submit" "$spec" --out "$work/dry" --shards 3 --nodes 2 --tasks-per-node 4 --gpus-per-task 1 \
  --time 01:00:00 --partition gpu --account proj --max-running 2 --interplace "$interplace" --dry-run
expect 0 '# spec: 5 configuration\(s\), 1-2 per shard' \
  "$submit" "$spec" --out "$work/dry" --shards 3 --interplace "$interplace" --dry-run
expect 0 '--job-name=interplace-spec-merge --dependency=afterany:\\<sweep-array-job-id\\> --kill-on-invalid-dep=yes .*merge\.sbatch --out .*--shards 3' \
  "$submit" "$spec" --out "$work/dry" --shards 3 --interplace "$interplace" --dry-run
[[ ! -e "$work/dry" ]] || fail "--dry-run created $work/dry"

# --- ranks per shard from the spec's plan -------------------------------------------------
spec4=$work/needs4.toml
printf 'models = ["resnet20"]\ndevices = 4\n' >"$spec4"
# Not given: the spec's 4 ranks (on one node, or spread over --nodes 2).
expect 0 '--job-name=interplace-needs4 --array=0-0 --nodes=1 --ntasks-per-node=4 ' \
  "$submit" "$spec4" --out "$work/dry" --interplace "$interplace" --dry-run
expect 0 '--nodes=2 --ntasks-per-node=2 ' \
  "$submit" "$spec4" --out "$work/dry" --nodes 2 --interplace "$interplace" --dry-run
expect 0 '# plan: 5 would run, 0 would be skipped, 0 would fail on 4 rank\(s\) per shard' \
  "$submit" "$spec4" --out "$work/dry" --interplace "$interplace" --dry-run
# Too few: refused with the option to use, before anything is created or submitted.
expect 2 'needs 4 ranks per shard .* would have 1 .*use --tasks-per-node 4' \
  "$submit" "$spec4" --out "$work/dry" --tasks-per-node 1 --interplace "$interplace" --dry-run
expect 2 'no configuration of .*needs4\.toml would run' \
  "$submit" "$spec4" --out "$work/dry" --tasks-per-node 3 --allow-too-few-ranks --interplace "$interplace" --dry-run
expect 2 'needs 4 ranks per shard .* would have 2 .*use --tasks-per-node 2 with --nodes 2' \
  "$submit" "$spec4" --out "$work/dry" --nodes 2 --tasks-per-node 1 --interplace "$interplace"
# Warning signal, requeues, exclusive nodes, CPU binding, filter and overrides reach sbatch.
expect 0 "--exclusive --signal=B:USR1@90 .*sweep\\.sbatch .* --max-requeues 1 --cpu-bind cores -- --filter resnet steps=3" \
  "$submit" "$spec4" --out "$work/dry" --interplace "$interplace" --dry-run --exclusive \
  --warn-before 90 --max-requeues 1 --cpu-bind cores --filter resnet --set steps=3
# --warn-before 0: no warning signal at all (sweep.sbatch has none of its own);
# --max-requeues 0: not requeued by Slurm after a node failure either.
expect 0 "--no-requeue .*sweep\\.sbatch .* --max-requeues 0" \
  "$submit" "$spec4" --out "$work/dry" --interplace "$interplace" --dry-run --warn-before 0 --max-requeues 0
no_warning=$("$submit" "$spec4" --out "$work/dry" --interplace "$interplace" --dry-run --warn-before 0)
! grep -q -- '--signal' <<<"$no_warning" || fail "--warn-before 0 still asks for a signal: $no_warning"
! grep -q -- '--no-requeue' <<<"$no_warning" || fail "--no-requeue without --max-requeues 0: $no_warning"
grep -q -- '--signal=B:USR1@300' <<<"$("$submit" "$spec4" --out "$work/dry" --interplace "$interplace" --dry-run)" \
  || fail "no default warning signal (--signal=B:USR1@300)"
expect 0 'merge\.sbatch .* --spec .*spec\.toml -- --filter resnet steps=3' \
  "$submit" "$spec4" --out "$work/dry" --interplace "$interplace" --dry-run --filter resnet --set steps=3
expect 2 "--set takes KEY=VALUE, not 'steps'" \
  "$submit" "$spec4" --out "$work/dry" --interplace "$interplace" --set steps
[[ ! -e "$work/dry" ]] || fail "--dry-run created $work/dry"

# --- submission through a fake sbatch ---------------------------------------------------------
mkdir -p "$work/bin"
cat >"$work/bin/sbatch" <<EOF
#!/usr/bin/env bash
# Records its arguments; the first call answers "jobid;cluster", later ones "jobid".
n=\$(( \$(cat "$work/sbatch.count" 2>/dev/null || echo 0) + 1 ))
echo "\$n" >"$work/sbatch.count"
printf '%s\n' "\$*" >>"$work/sbatch.calls"
if ((n == 1)); then echo "41;cluster"; else echo "\$((40 + n))"; fi
EOF
chmod +x "$work/bin/sbatch"
out=$work/run
expect 0 'sweep job: +41 interplace-spec \(array 0-1: 2 shard' env PATH="$work/bin:$PATH" \
  "$submit" "$spec" --out "$out" --shards 2 --interplace "$interplace"
grep -q -- '--dependency=afterany:41 ' "$work/sbatch.calls" || fail "the merge job does not depend on array 41: $(cat "$work/sbatch.calls")"
grep -q -- "--output=$out/logs/sweep-%A_%a.out" "$work/sbatch.calls" || fail "sweep log path: $(cat "$work/sbatch.calls")"
cmp -s "$spec" "$out/spec.toml" || fail "the spec was not copied to $out/spec.toml"
[[ -d "$out/logs" ]] || fail "no $out/logs"

# Results already there: refused without --resume, accepted with it; another spec refused.
touch "$out/shard-0.h5"
expect 2 'already holds results .*shard-0\.h5.*--resume' env PATH="$work/bin:$PATH" \
  "$submit" "$spec" --out "$out" --shards 2 --interplace "$interplace"
expect 0 'merge job: +44 interplace-spec-merge \(merge and report, after every shard of 43 ' env PATH="$work/bin:$PATH" \
  "$submit" "$spec" --out "$out" --shards 2 --interplace "$interplace" --resume
expect 2 'holds a sweep in 2 shards; resume it with --shards 2' env PATH="$work/bin:$PATH" \
  "$submit" "$spec" --out "$out" --shards 3 --interplace "$interplace" --resume
echo '# another spec' >"$work/other.toml"
expect 2 'differs from .*spec\.toml' env PATH="$work/bin:$PATH" \
  "$submit" "$work/other.toml" --out "$out" --shards 2 --interplace "$interplace" --resume

expect 2 'was made with other --filter/--set' env PATH="$work/bin:$PATH" \
  "$submit" "$spec" --out "$out" --shards 2 --interplace "$interplace" --resume --set steps=3

# sbatch refusing the merge job: the array id is still reported.
cat >"$work/bin/sbatch" <<'EOF'
#!/usr/bin/env bash
[[ "$*" == *--dependency* ]] && { echo "sbatch: error: Batch job submission failed" >&2; exit 1; }
echo 77
EOF
expect 1 'sweep array 77 is submitted, but sbatch refused the merge job' env PATH="$work/bin:$PATH" \
  "$submit" "$spec" --out "$work/run2" --shards 2 --interplace "$interplace"

if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
echo "all slurm/submit checks passed"
