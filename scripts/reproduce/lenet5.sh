#!/usr/bin/env bash
# LeNet-5-Caffe on MNIST at 200 epochs (docs/results/lenet5.md): Sparse VD's recipe
# (experiment=sparse_vd_lenet5: VarDrop+LR+AR, batch 100, flat-then-linear lr, KL warm-up) and the paper's protocol
# for dense, logsum, magnitude_pruning and hard_concrete (experiment=paper_lenet5), one seed each (SEED), then one
# report. The Sparse VD run trains beside the sweep (one thread each on a CPU; the sweep's stacked launcher gets
# N_JOBS worker processes, default: the cores left). Every run resumes from its checkpoint: rerun the same command.
#
#   scripts/reproduce/lenet5.sh
#   EPOCHS=1 scripts/reproduce/lenet5.sh data.train_limit=512  (a smoke test)
#
# Writes ${OUT} (default outputs/lenet5)/sparse_vd_lenet5_seed${SEED}/, ${OUT}/paper_lenet5/<overrides>/ and the
# report in ${OUT}/report (or REPORT_DIR; never over an earlier one).
set -euo pipefail
EPOCHS=${EPOCHS:-200}
SEED=${SEED:-0}
DATA=${DATA:-${ADROP_DATA:-data}}  # MNIST's root (the folder holding MNIST/raw/): DATA, else $ADROP_DATA, else data/
OUT=${OUT:-outputs/lenet5}
CORES=$(nproc 2>/dev/null || echo 2)
N_JOBS=${N_JOBS:-$(( CORES > 1 ? CORES - 1 : 1 ))}
REPORT_DIR=${REPORT_DIR:-${OUT}/report}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
STATUS=0

adrop train experiment=sparse_vd_lenet5 "seed=${SEED}" "epochs=${EPOCHS}" "data.root=${DATA}" progress=never \
  "hydra.run.dir=${OUT}/sparse_vd_lenet5_seed${SEED}" "$@" &
SPARSE_VD=$!
adrop train -m experiment=paper_lenet5 method=dense,logsum,magnitude_pruning,hard_concrete "seed=${SEED}" \
  "epochs=${EPOCHS}" "data.root=${DATA}" hydra/launcher=stacked "hydra.launcher.n_jobs=${N_JOBS}" \
  "hydra.sweep.dir=${OUT}/paper_lenet5" "hydra.sweep.subdir=\${hydra:job.override_dirname}" \
  "hydra.job.config.override_dirname.exclude_keys=[experiment,data.root,epochs,progress]" "$@" || STATUS=1
wait "${SPARSE_VD}" || STATUS=1
if [ -e "${REPORT_DIR}" ]; then REPORT_DIR="${REPORT_DIR}.$(date +%Y%m%d-%H%M%S)"; fi
adrop report "${OUT}/sparse_vd_lenet5_seed${SEED}" "${OUT}/paper_lenet5" --out "${REPORT_DIR}"
exit "${STATUS}"
