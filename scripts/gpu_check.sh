#!/usr/bin/env bash
# The GPU check of docs/gpu.md: run from the repository's root on a
# machine with CUDA, torch and Jupyter's nbclient/ipykernel installed.
#   OUT=gpu_out GPU_MINUTES=1 scripts/gpu_check.sh
# 1. what the chapters' install cell does to the installed packages (pip freeze
#    before and after; TRANSFORMER_LIB_SOURCE=. stands in for the repository's URL);
# 2. the doctor, and benchmarks/bench_attention.py, bench_decode.py and
#    bench_first_epoch.py on CUDA;
# 3. every chapter, executed headless twice, each pass in its own copy of the
#    repository: as the GPU gives it ("auto": bf16 where the GPU has it) and with
#    float16 and loss scaling forced (TRANSFORMER_LIB_PRECISION=float16), as a T4
#    runs it. Chapter 8's GPU_MINUTES is lowered to $GPU_MINUTES. In each pass
#    three kernels run at once (chapter 8; chapter 9; the others in order), so
#    six share the GPU: the times are an upper bound on a lone reader's.
# To check part of it again: BENCH=0 skips the benchmarks, CHAPTERS="08 09"
# runs those chapters only (each in its own kernel and copy, per pass),
# CHAPTERS=none none of them;
# PASS_SECONDS caps each pass (a chapter still running then is interrupted
# and keeps what it printed).
# EVERYDAY=1 first trains the everyday recipe there (the run of
# records/everyday-h100/), as `make everyday` does but started by torchrun
# (nccl; NPROC processes, default 1), and publishes it into $OUT/everyday
# (the int8 model.pt, log.json, SHA256SUMS: what the package ships; the
# float32 checkpoint stays behind, too large to bring back).
# EVERYDAY_SECONDS (default 480) stops a run that would outlast the device's
# 10 minutes a command: it kills it, and nothing is published. (Not
# --max-seconds: a time budget makes the linear decay follow the clock where
# the clock is further along than the epochs, so a run it never stopped still
# trained with another schedule. On an H100 the first epoch took 97 s, the
# nine others 16-19 s each: 254 s in all, plus 41 s of loading and scoring,
# before fit left out cuDNN's attention, whose cost per new shape made the
# first epoch the slow one: benchmarks/bench_first_epoch.py.)
# Everything lands in $OUT: log.txt, freeze.diff and results.tar.gz (each pass's
# executed notebooks, what they printed, times.json).
set -uo pipefail
OUT=$(realpath -m "${OUT:-gpu_out}")
GPU_MINUTES=${GPU_MINUTES:-1}
PASS_SECONDS=${PASS_SECONDS:-420}
BENCH=${BENCH:-1}
CHAPTERS=${CHAPTERS:-}
REPO=$(pwd)
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__,
torch.version.cuda, torch.cuda.get_device_name(),
'bf16:', torch.cuda.is_bf16_supported())"

echo "== the install cell"
python3 -m pip freeze 2>/dev/null | sort > "$OUT/freeze_before.txt"
# from /tmp: in the repository's root, its folder transformer_lib/ would be found
cd /tmp && TRANSFORMER_LIB_SOURCE=$REPO python3 - <<'EOF'
import json, os, time
path = os.environ["TRANSFORMER_LIB_SOURCE"] + "/notebooks/01_attention.ipynb"
cell = json.load(open(path))["cells"][2]
start = time.perf_counter()
exec("".join(cell["source"]))
print(f"install cell: {time.perf_counter() - start:.1f} s")
EOF
cd "$REPO"
python3 -m pip freeze 2>/dev/null | sort > "$OUT/freeze_after.txt"
diff "$OUT/freeze_before.txt" "$OUT/freeze_after.txt" > "$OUT/freeze.diff"
echo "pip freeze, before -> after:"; cat "$OUT/freeze.diff"
rm "$OUT/freeze_before.txt" "$OUT/freeze_after.txt"
(cd /tmp && python3 -m transformer_lib doctor)

if [ "${EVERYDAY:-0}" = 1 ]; then
    echo "== the everyday model, trained with torchrun"
    build=/tmp/everyday && rm -rf "$build" && mkdir -p "$build"
    start=$(date +%s)
    timeout "${EVERYDAY_SECONDS:-480}" \
        torchrun --standalone --nproc_per_node="${NPROC:-1}" -m transformer_lib \
        train --recipe everyday --quiet --out "$build/model.pt" \
        --record "$build/log.json"
    echo "everyday: trained in $(( $(date +%s) - start )) s"
    python3 scripts/publish_everyday.py "$build" "$OUT/everyday" ||
        { mkdir -p "$OUT/everyday" && cp "$build/log.json" "$OUT/everyday/"; }
fi

if [ "$BENCH" = 1 ]; then
    echo "== benchmarks on CUDA"
    python3 benchmarks/bench_attention.py --device cuda
    python3 benchmarks/bench_decode.py --device cuda
    python3 benchmarks/bench_decode.py --device cuda --batch 1
    python3 benchmarks/bench_first_epoch.py --device cuda
fi

[ "$CHAPTERS" = none ] && exit 0
echo "== chapters"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
run_pass() {      # run_pass NAME [VAR=VALUE ...]: one pass, three kernels at once
    local name=$1; shift
    local results=$OUT/results/$name
    mkdir -p "$results"
    for part in ${CHAPTERS:-08 09 rest}; do
        rm -rf "/tmp/pass-$name-$part"
        cp -r "$REPO" "/tmp/pass-$name-$part"
    done
    local rest="07 01 02 03 04 05 06 10"
    for part in ${CHAPTERS:-08 09 rest}; do
        local chapters=$part
        [ "$part" = rest ] && chapters=$rest
        (cd "/tmp/pass-$name-$part" && env "$@" \
            timeout $(( PASS_SECONDS + 60 )) \
            python3 scripts/run_chapters.py $chapters \
            --deadline "$PASS_SECONDS" \
            --set GPU_MINUTES="$GPU_MINUTES" --out "$results/$part" \
            2>&1 | sed "s/^/[$name] /") &
        PIDS+=($!)
    done
}
start=$(date +%s)
PIDS=()      # (a bare wait would wait for the tee above too: for ever)
run_pass auto
run_pass float16 TRANSFORMER_LIB_PRECISION=float16
wait "${PIDS[@]}"
echo "chapters: $(( $(date +%s) - start )) s in all"
nvidia-smi --query-gpu=memory.used --format=csv,noheader
tar -czf "$OUT/results.tar.gz" -C "$OUT" results && rm -rf "$OUT/results"
