#!/usr/bin/env bash
# What a machine with a CUDA GPU checks first: the CUDA path against the CPU reference, every method trained there, and
# the stacked engine's speed. Any such machine with adrop installed runs it; MNIST under DATA (default: $ADROP_DATA,
# else data/, downloaded where missing), every output under OUT (default gpu_out/):
#   scripts/tools/gpu_checks.sh once    what fits in about 9 minutes: tests/test_cuda.py, every method for an epoch,
#        LeNet-5 per weight and by units, bench-inference, bench_stacked (dense and VarDrop+LR+AR, K = 1, 16, 64) and
#        the suite on 12 workers (pytest-xdist), each step under its own time limit so that a slow one leaves the
#        others their time
#   scripts/tools/gpu_checks.sh tests   the whole test suite (tests/test_cuda.py runs where there is a GPU)
#   scripts/tools/gpu_checks.sh train   every method, 2 epochs of MNIST on device=${DEVICE}; LeNet-5 too
#   scripts/tools/gpu_checks.sh bench   bench_stacked (LeNet-300-100, K up to 64) and bench_train
#   scripts/tools/gpu_checks.sh bench2  compiled stacks of 64, LeNet-5 stacks, the conv product
# Two longer parts train result rows, for LIMIT seconds per call; their folder (gpu_out/) is resumed by the same call
# again, and their files but checkpoints and weights come back as a tar.gz under OUT:
#   scripts/tools/gpu_checks.sh lenet5  LeNet-5's structured forms at 200 epochs (scripts/reproduce/structured_train.sh,
#        MODEL=lenet5), each form's SEEDS (default 0,1,2) as one stack, every form's stack at once; FORMS picks them
#        (default: group magnitude pruning per layer at 0.8, AdaProx priced per multiply-add at 1e-5, adaptive
#        dropout at 5e-6; logsum and adatikhonov at 5e-6 also known); LIMIT default 540
#   scripts/tools/gpu_checks.sh paper   the paper's table with 3 seeds (reproduce_paper.sh's first sweep, stacks of the
#        3 seeds, N_JOBS stacks at once), the report once every run has finished; LIMIT default 510
# It works in the repository's root wherever it is called from: relative paths in the overrides are the repository's.
# DEVICE=cpu runs the train and bench parts on the CPU: a smoke test of this script,
#   DEVICE=cpu OUT=/tmp/gpu_smoke scripts/tools/gpu_checks.sh train data.train_limit=256
set -u
PART=${1:?which part: tests, train, bench, bench2, once, lenet5 or paper}
shift
EXTRA=("$@")  # more adrop train overrides for the train and paper parts (a smoke test: data.train_limit=256)
DEVICE=${DEVICE:-cuda}
DATA=${DATA:-${ADROP_DATA:-data}}
OUT=${OUT:-gpu_out}
mkdir -p "${OUT}"
export DATA=$(realpath -m "${DATA}") OUT=$(realpath "${OUT}") DEVICE  # the parts it calls itself: the same
SELF=$(realpath "$0")
cd "$(dirname "${SELF}")/../.." || exit 1  # the repository: its conf/, tests/ and scripts/, from wherever it is called
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | tee "${OUT}/gpu.txt"
case "${PART}" in
  tests)
    python3 -m pytest -q -p no:cacheprovider 2>&1 | tee "${OUT}/tests.txt" | tail -15 ;;
  train)
    for f in conf/method/*.yaml; do  # every method (fixed_mask fine-tunes a run: below)
      m=$(basename "${f}" .yaml); [ "${m}" = fixed_mask ] && continue
      adrop train "method=${m}" device=${DEVICE} epochs=2 "data.root=${DATA}" progress=never \
        "hydra.run.dir=${OUT}/train/${m}" "${EXTRA[@]}" 2>&1 | tail -1
    done
    adrop train experiment=finetune_kept_weights "init_from=${OUT}/train/magnitude_pruning" device=${DEVICE} epochs=2 \
      "data.root=${DATA}" progress=never "hydra.run.dir=${OUT}/train/fixed_mask" "${EXTRA[@]}" 2>&1 | tail -1
    adrop train model=lenet5 method=vardrop_lr_ar device=${DEVICE} epochs=1 "data.root=${DATA}" progress=never \
      "hydra.run.dir=${OUT}/train/lenet5_vardrop_lr_ar" "${EXTRA[@]}" 2>&1 | tail -1
    adrop bench-inference "${OUT}/train/vardrop_lr_ar" --data "${DATA}" 2>&1 | tee "${OUT}/bench_inference.txt" ;;
  bench)
    python3 scripts/benchmarks/bench_stacked.py --device ${DEVICE} --data "${DATA}" --ks 1,4,16,64 \
      --methods dense,logsum,vardrop_lr_ar,hard_concrete 2>&1 | tee "${OUT}/bench_stacked.txt"
    python3 scripts/benchmarks/bench_train.py --device ${DEVICE} --data "${DATA}" --rounds 2 2>&1 \
      | tee "${OUT}/bench_train.txt" ;;
  bench2)
    python3 scripts/benchmarks/bench_stacked.py --device ${DEVICE} --data "${DATA}" --ks 64 --compile \
      --methods dense,vardrop_lr_ar 2>&1 | tee "${OUT}/bench_stacked_compiled.txt"
    python3 scripts/benchmarks/bench_stacked.py --device ${DEVICE} --data "${DATA}" --ks 1,4,16 --model lenet5 \
      --methods dense,vardrop_lr_ar 2>&1 | tee "${OUT}/bench_stacked_lenet5.txt"
    python3 scripts/benchmarks/bench_conv_product.py --device ${DEVICE} --ks 1,4,16,64 2>&1 \
      | tee "${OUT}/bench_conv_product.txt" ;;
  paper)
    SWEEP=gpu_out/paper_lenet300_e${EPOCHS:-200}
    PAPER_ONLY=1 SEEDS=${SEEDS:-0,1,2} DATA="${DATA}" SWEEP_DIR="${SWEEP}" REPORT_DIR="${SWEEP}/report.$(date +%H%M%S)" \
      timeout "${LIMIT:-510}" scripts/reproduce/reproduce_paper.sh "device=${DEVICE}" progress=never \
      "hydra.launcher.n_jobs=${N_JOBS:-6}" "${EXTRA[@]}" 2>&1 | tail -40 | tee "${OUT}/paper.txt"
    tar czf "${OUT}/paper_lenet300.tar.gz" --exclude=checkpoint.pt --exclude=weights.npz "${SWEEP}" ;;
  once)
    export ADROP_DATA="${DATA}"  # the tests' MNIST
    timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py 2>&1 | tee "${OUT}/test_cuda.txt" | tail -25
    timeout 170 "${SELF}" train epochs=1 "${EXTRA[@]}" 2>&1 | tee "${OUT}/train.txt"
    timeout 40 adrop train model=lenet5 method=logsum structure=neuron device=${DEVICE} epochs=1 "data.root=${DATA}" \
      progress=never "hydra.run.dir=${OUT}/train/lenet5_logsum_neuron" "${EXTRA[@]}" 2>&1 | tail -1 | tee -a "${OUT}/train.txt"
    timeout 90 python3 scripts/benchmarks/bench_stacked.py --device ${DEVICE} --data "${DATA}" --ks 1,16,64 \
      --methods dense,vardrop_lr_ar 2>&1 | tee "${OUT}/bench_stacked.txt"
    timeout 100 python3 -m pytest -v -p no:cacheprovider -n 12 2>&1 | grep -v -E "PASSED|PytestBenchmark|warner" \
      | tee "${OUT}/suite.txt" | tail -30 ;;  # -v: each failure named as it happens, before the limit cuts the summary off
  lenet5)
    LENET5=gpu_out/structured_lenet5_e${EPOCHS:-200}
    declare -A GRIDS=([magnitude_pruning]=0.8 [adaprox]=1e-5 [adaptive_dropout]=5e-6 [logsum]=5e-6 [adatikhonov]=5e-6)
    for form in ${FORMS:-magnitude_pruning adaprox adaptive_dropout}; do
      cost=(-- lam_cost=macs); [ "${form}" = magnitude_pruning ] && cost=(--)
      env "GRID_${form}=${GRIDS[$form]:?no grid for ${form}}" MODEL=lenet5 EPOCHS=${EPOCHS:-200} SEEDS=${SEEDS:-0,1,2} \
        OUT="${LENET5}" DATA="${DATA}" timeout "${LIMIT:-540}" scripts/reproduce/structured_train.sh "${form}" \
        "${cost[@]}" \
        "device=${DEVICE}" "${EXTRA[@]}" > "${OUT}/lenet5_${form}.txt" 2>&1 &  # GPU_STACK: a form's seeds, one stack
    done
    wait
    tail -n 3 "${OUT}"/lenet5_*.txt
    tar czf "${OUT}/lenet5_structured.tar.gz" --exclude=checkpoint.pt --exclude=weights.npz "${LENET5}" ;;
  *) echo "unknown part ${PART}: tests, train, bench, bench2, once, lenet5 or paper" >&2; exit 2 ;;
esac
