#!/usr/bin/env bash
# Which of the authors' departures from the paper's text explains adrop's gap to the paper's eta-Trick and AdaProx
# rows (docs/results/authors_code.md): the paper's LeNet-300-100 setting, 200 epochs,
# 3 seeds, each switch on and off (method.params.authors_*; AdaProx's counting rule also with the authors' per-epoch
# lr decay, schedule=linear_per_epoch, since it reads the last step's size; then also with their prox on every
# validation batch), every run also evaluated without the keep rule (evaluate_unmasked=true: the authors'
# evaluation). Then one report of all sweeps.
#
#   scripts/reproduce/authors_gaps.sh          jobs one after another
#   LAUNCHER=joblib scripts/reproduce/authors_gaps.sh hydra.launcher.n_jobs=2  (single runs in
#                                                                   parallel; set OMP_NUM_THREADS=1)
#   LAUNCHER=stacked scripts/reproduce/authors_gaps.sh compile=true
#                                                                   (fused: docs/results/stacked_speed.md)
#   EPOCHS=1 scripts/reproduce/authors_gaps.sh data.train_limit=512  (arguments go to adrop train)
#
# Writes ${SWEEP_DIR} (default outputs/multirun/authors_gaps_e$EPOCHS)/{adaprox,adaprox_authors_schedule,
# adaprox_authors_code,eta_trick}/ and the
# report in ${SWEEP_DIR}/report (or REPORT_DIR). An interrupted sweep continues where it stopped: run the same command.
set -euo pipefail
EPOCHS=${EPOCHS:-200}
SEEDS=${SEEDS:-0,1,2}
DATA=${DATA:-${ADROP_DATA:-data}}  # MNIST's root (the folder holding MNIST/raw/): DATA, else $ADROP_DATA, else data/
SWEEP_DIR=${SWEEP_DIR:-outputs/multirun/authors_gaps_e${EPOCHS}}
REPORT_DIR=${REPORT_DIR:-${SWEEP_DIR}/report}
STATUS=0
COMMON=(experiment=paper_lenet300 evaluate_unmasked=true "epochs=${EPOCHS}" "data.root=${DATA}"
        "hydra.sweep.subdir=\${hydra:job.override_dirname}"
        "hydra.job.config.override_dirname.exclude_keys=[experiment,method,evaluate_unmasked,data.root,epochs,progress]")
if [ -n "${LAUNCHER:-}" ]; then COMMON+=("hydra/launcher=${LAUNCHER}"); fi
COMMON+=("$@")

# seed first: Hydra varies the last override fastest, so every setting's seed 0 comes before any seed 1
adrop train -m "seed=${SEEDS}" method=adaprox method.params.authors_keep_rule=false,true "hydra.sweep.dir=${SWEEP_DIR}/adaprox" \
  "${COMMON[@]}" || STATUS=1
# the authors' counting rule uses the last step's size, which depends on the lr schedule: theirs decays per epoch
adrop train -m "seed=${SEEDS}" method=adaprox method.params.authors_keep_rule=true schedule=linear_per_epoch \
  "hydra.sweep.dir=${SWEEP_DIR}/adaprox_authors_schedule" "${COMMON[@]}" || STATUS=1
# their skorch callback also proxes on each validation batch (94 more per epoch): the authors' AdaProx as it runs
adrop train -m "seed=${SEEDS}" method=adaprox method.params.authors_keep_rule=true \
  method.params.authors_validation_prox=true schedule=linear_per_epoch \
  "hydra.sweep.dir=${SWEEP_DIR}/adaprox_authors_code" "${COMMON[@]}" || STATUS=1
adrop train -m "seed=${SEEDS}" method=eta_trick method.params.authors_dual=false,true method.params.authors_extra_term=false,true \
  "hydra.sweep.dir=${SWEEP_DIR}/eta_trick" "${COMMON[@]}" || STATUS=1
if [ -e "${REPORT_DIR}" ]; then REPORT_DIR="${REPORT_DIR}.$(date +%Y%m%d-%H%M%S)"; fi  # never over an earlier report
adrop report "${SWEEP_DIR}/adaprox" "${SWEEP_DIR}/adaprox_authors_schedule" "${SWEEP_DIR}/adaprox_authors_code" \
  "${SWEEP_DIR}/eta_trick" --paper \
  --out "${REPORT_DIR}"
exit "${STATUS}"
