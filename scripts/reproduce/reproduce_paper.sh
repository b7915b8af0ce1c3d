#!/usr/bin/env bash
# Reproduce the paper's LeNet-300-100 comparison (its Figure 2 and Tables 4-5), plus adaptive dropout itself
# (Algorithm 1 with masks, dual to LogSum), MagnitudePruning, HardConcrete and the dense network; then settings
# beyond the paper (conf/experiment/): sparse_vd_recipe (VarDrop+LR+AR trained as Molchanov et al. trained Sparse VD), sparse_vd_recipe_sparser (the same with lam x 1.5),
# sparse_vd_recipe_b100_sparser (batch 100, lam x 1.75) and pruning_at_sparse_vd_budget (plain magnitude pruning at
# Sparse VD's budget); then 10 epochs of fine-tuning what each of the two *_sparser runs kept
# (experiment=finetune_kept_weights: the points that beat Sparse VD in docs/results/beyond_the_paper.md); then one report of everything.
#
#   scripts/reproduce/reproduce_paper.sh            200 epochs, seeds 0, 1, 2, the stacked launcher (a GPU stacks the
#                                                   seeds of a row; a CPU runs one stack per core, of the method's
#                                                   measured size; add compile=true on a CPU: docs/results/stacked_speed.md)
#   EPOCHS=40 scripts/reproduce/reproduce_paper.sh
#   SEEDS=0 LAUNCHER=joblib scripts/reproduce/reproduce_paper.sh  (one seed, single runs in parallel)
#   EPOCHS=1 scripts/reproduce/reproduce_paper.sh data.train_limit=512
#                                                   (arguments go to adrop train)
#   PAPER_ONLY=1 scripts/reproduce/reproduce_paper.sh  only the paper's sweep and its report
#                                                   (scripts/tools/gpu_checks.sh paper)
#   PAPER_ONLY=1 METHODS=logsum,adaprox scripts/reproduce/reproduce_paper.sh
#                                                   some of its rows (two such commands with other
#                                                   METHODS can share the sweep folder: each holds only its own jobs)
#
# Writes: $SWEEP_DIR (default outputs/multirun/paper_lenet300_e$EPOCHS), one folder per method and seed;
# ${SWEEP_DIR}_beyond, one folder per experiment and seed; ${SWEEP_DIR}_finetuned/<stage-1 run>/seed=N; and the report (results.csv, results.md with the paper's
# numbers beside ours, figures) in a new folder beside them, or in REPORT_DIR.
# A sweep that is interrupted can be continued: run the same command with SWEEP_DIR set to its folder; every job
# resumes from its last checkpoint and finished jobs are skipped. A sweep with failed jobs does not stop the script:
# it goes on, reports what finished, and exits 1 at the end.
set -euo pipefail
EPOCHS=${EPOCHS:-200}
SEEDS=${SEEDS:-0,1,2}
LAUNCHER=${LAUNCHER:-stacked}
STATUS=0
DATA=${DATA:-${ADROP_DATA:-data}}  # MNIST's root (the folder holding MNIST/raw/): DATA, else $ADROP_DATA, else data/
SWEEP_DIR=${SWEEP_DIR:-outputs/multirun/paper_lenet300_e${EPOCHS}}
METHODS=${METHODS:-vardrop_lr_ar,vardrop_lr,vardrop,eta_trick,adaprox,adatikhonov,logsum,adaptive_dropout,magnitude_pruning,hard_concrete,dense}
COMMON=("seed=${SEEDS}" "epochs=${EPOCHS}" "data.root=${DATA}" "hydra.sweep.subdir=\${hydra:job.override_dirname}")
if [ -n "${LAUNCHER:-}" ]; then COMMON+=("hydra/launcher=${LAUNCHER}"); fi
COMMON+=("$@")
REPORT=()
if [ -n "${REPORT_DIR:-}" ]; then REPORT+=(--out "${REPORT_DIR}"); fi

adrop train -m experiment=paper_lenet300 "method=${METHODS}" "hydra.sweep.dir=${SWEEP_DIR}" "${COMMON[@]}" \
  "hydra.job.config.override_dirname.exclude_keys=[experiment,data.root,epochs,progress]" || STATUS=1
if [ -n "${PAPER_ONLY:-}" ]; then
  adrop report "${SWEEP_DIR}" --paper "${REPORT[@]}"
  exit "${STATUS}"
fi
adrop train -m experiment=sparse_vd_recipe,sparse_vd_recipe_sparser,sparse_vd_recipe_b100_sparser,pruning_at_sparse_vd_budget \
  "hydra.sweep.dir=${SWEEP_DIR}_beyond" "${COMMON[@]}" "hydra.job.config.override_dirname.exclude_keys=[data.root,epochs]" \
  || STATUS=1

# stage 2: fine-tune what each finished *_sparser run kept (its own seed for the batch order)
for src in "${SWEEP_DIR}_beyond"/*experiment=sparse_vd_recipe*_sparser*; do  # named by overrides, extra ones too
  if [ ! -f "${src}/weights.npz" ]; then echo "skipped (not finished): ${src}"; continue; fi
  seed=$(sed -n 's/^- seed=//p' "${src}/.hydra/overrides.yaml")
  FINETUNE=("seed=${seed}" "data.root=${DATA}" "hydra.sweep.subdir=\${hydra:job.override_dirname}")
  if [ -n "${LAUNCHER:-}" ]; then FINETUNE+=("hydra/launcher=${LAUNCHER}"); fi
  adrop train -m experiment=finetune_kept_weights "init_from='${src}'" "${FINETUNE[@]}" "$@" \
    "hydra.sweep.dir='${SWEEP_DIR}_finetuned/$(basename "${src}")'" \
    "hydra.job.config.override_dirname.exclude_keys=[experiment,init_from,data.root]" || STATUS=1
done
SWEEPS=("${SWEEP_DIR}" "${SWEEP_DIR}_beyond")
if [ -d "${SWEEP_DIR}_finetuned" ]; then SWEEPS+=("${SWEEP_DIR}_finetuned"); fi
adrop report "${SWEEPS[@]}" --paper "${REPORT[@]}"
exit "${STATUS}"
