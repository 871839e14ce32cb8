# Sourced by calibrated/run.sh and core-per-rank/run.sh (with $bin and $dir set): the two
# models' CPU-time profiles of the pass-through check, one thread, with the runtime's units
# and node times (interplace profile --clock cpu), into $dir/<name>.tsv and .txt.
profile() {  # name, then model options
  local name=$1
  shift
  mpirun --oversubscribe -np 2 "$bin" profile "$@" --threads 1 --clock cpu --repeats 7 \
    --warmup 2 --out "$dir/$name.tsv" > "$dir/$name.txt"
}
profile resnet20-w0.5-b32 --model resnet20 --width-multiplier 0.5 --batch-size 32
profile gpt-mini-t64-b4 --model gpt-mini --sequence-length 64 --batch-size 4
