#!/usr/bin/env bash
# Does the paper's duality hold on a deep network (issue 16)? Adaptive dropout itself (method=adaptive_dropout:
# Algorithm 1 with real masks, keep probability eta_hat / (eta_hat + lam) from LogSum(2)) beside the deterministic
# methods it is dual to (logsum, adatikhonov, adaprox: scripts/reproduce/reproduce_paper.sh runs those, and
# adaptive_dropout's default row), in the paper's LeNet-300-100 setting at 200 epochs, 3 seeds: Bernoulli and Gaussian
# masks, with and without the additive reparameterisation. Then adaptive dropout with the calculus's other penalties in
# place of LogSum(2) (Bernoulli, additive; MCP, SCAD, l1 and the VarDrop dual at their defaults; PENALTY_SEEDS, default
# seed 0). Then the paper's remark that VarDrop run for 1000 epochs reaches about 0.1 nonzero (one seed). Then one
# report over the parts that exist. Every part is resumable: rerun the same command (finished runs are skipped).
#
#   PARTS=masks,penalties (or vardrop) runs only those parts, so two commands can share the cores.
#
#   scripts/reproduce/deep_duality.sh             (set OMP_NUM_THREADS=1 on a CPU: the stacked
#                                                                      launcher trains one stack per core)
#   EPOCHS=1 LONG_EPOCHS=2 scripts/reproduce/deep_duality.sh data.train_limit=512  (a smoke test)
#
# Writes ${SWEEP_DIR} (default outputs/multirun/deep_duality_e$EPOCHS)/{adaptive_dropout,vardrop_e$LONG_EPOCHS}/ and
# the report in ${SWEEP_DIR}/report (or REPORT_DIR; never over an earlier one).
set -euo pipefail
EPOCHS=${EPOCHS:-200}
LONG_EPOCHS=${LONG_EPOCHS:-1000}
SEEDS=${SEEDS:-0,1,2}
PENALTY_SEEDS=${PENALTY_SEEDS:-0}
PENALTIES=${PENALTIES:-mcp,scad,l1,variational_dropout}
PARTS=${PARTS:-masks,penalties,vardrop}
DATA=${DATA:-${ADROP_DATA:-data}}  # MNIST's root (the folder holding MNIST/raw/): DATA, else $ADROP_DATA, else data/
LAUNCHER=${LAUNCHER:-stacked}
SWEEP_DIR=${SWEEP_DIR:-outputs/multirun/deep_duality_e${EPOCHS}}
REPORT_DIR=${REPORT_DIR:-${SWEEP_DIR}/report}
STATUS=0
COMMON=(experiment=paper_lenet300 "data.root=${DATA}" "hydra/launcher=${LAUNCHER}"
        "hydra.sweep.subdir=\${hydra:job.override_dirname}"
        "hydra.job.config.override_dirname.exclude_keys=[experiment,method,data.root,epochs,progress]")
COMMON+=("$@")

part() { [[ ",${PARTS}," == *",$1,"* ]]; }

if part masks; then
  adrop train -m "seed=${SEEDS}" method=adaptive_dropout method.params.mask=bernoulli,gaussian \
    method.params.additive=true,false "epochs=${EPOCHS}" "hydra.sweep.dir=${SWEEP_DIR}/adaptive_dropout" \
    "${COMMON[@]}" || STATUS=1
fi
if part penalties; then
  adrop train -m "seed=${PENALTY_SEEDS}" method=adaptive_dropout "method.params.penalty=${PENALTIES}" \
    "epochs=${EPOCHS}" "hydra.sweep.dir=${SWEEP_DIR}/adaptive_dropout_penalties" "${COMMON[@]}" || STATUS=1
fi
if part vardrop; then
  adrop train -m seed=0 method=vardrop "epochs=${LONG_EPOCHS}" \
    "hydra.sweep.dir=${SWEEP_DIR}/vardrop_e${LONG_EPOCHS}" "${COMMON[@]}" || STATUS=1
fi
FOLDERS=()
for f in adaptive_dropout adaptive_dropout_penalties "vardrop_e${LONG_EPOCHS}"; do
  if [ -d "${SWEEP_DIR}/${f}" ]; then FOLDERS+=("${SWEEP_DIR}/${f}"); fi
done
if [ -e "${REPORT_DIR}" ]; then REPORT_DIR="${REPORT_DIR}.$(date +%Y%m%d-%H%M%S)"; fi
adrop report "${FOLDERS[@]}" --paper --out "${REPORT_DIR}"
exit "${STATUS}"
