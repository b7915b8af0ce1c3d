#!/usr/bin/env bash
# Every method at one sparsity: per method, lam searched for TARGET nonzero (within
# 5%) with hydra/sweeper=lam_search on seed 0 in the paper's LeNet-300-100 setting (short rounds of a tenth of the
# epochs, then full ones), then seeds 1 and 2 trained at the lam found. Magnitude pruning takes the target directly.
#
#   DATA=../shared/data scripts/matched_sparsity.sh                       all methods, target 0.02, 200 epochs
#   METHODS="logsum adaprox" TARGET=0.05 DATA=../shared/data scripts/matched_sparsity.sh hydra.launcher.n_jobs=1
#   EPOCHS=10 DATA=../shared/data scripts/matched_sparsity.sh             (arguments go to every adrop train)
#
# Writes ${SWEEP_DIR} (default outputs/multirun/matched_${TARGET}_e${EPOCHS})/<method>/search (the search, its
# search.csv) and <method>/seeds (seeds 1 and 2). An interrupted method continues where it stopped: run the same
# command. Then: adrop report ${SWEEP_DIR}/*/search ${SWEEP_DIR}/*/seeds --out <folder>, and keep seed 0's run
# closest to the target (search.csv) with seeds 1 and 2.
set -euo pipefail
EPOCHS=${EPOCHS:-200}
TARGET=${TARGET:-0.02}
METHODS=${METHODS:-"logsum eta_trick adaprox adatikhonov adaptive_dropout vardrop vardrop_lr vardrop_lr_ar hard_concrete magnitude_pruning"}
DATA=${DATA:-${ADROP_DATA:-data}}
SWEEP_DIR=${SWEEP_DIR:-outputs/multirun/matched_${TARGET}_e${EPOCHS}}
STATUS=0
COMMON=(experiment=paper_lenet300 "epochs=${EPOCHS}" "data.root=${DATA}" progress=never hydra/launcher=stacked "$@")

for METHOD in ${METHODS}; do
  adrop train -m hydra/sweeper=lam_search "hydra.sweeper.target_nonzero=${TARGET}" seed=0 "method=${METHOD}" \
    "hydra.sweep.dir=${SWEEP_DIR}/${METHOD}/search" "${COMMON[@]}" || { STATUS=1; continue; }
  if [ "${METHOD}" = magnitude_pruning ]; then
    SET="method.params.final_sparsity=$(python -c "print(1 - ${TARGET})")"
  else  # the lam of seed 0's full run closest to the target, from every search table in the folder
    SET="lam=$(python - "${SWEEP_DIR}/${METHOD}/search" "${TARGET}" <<'EOF'
import csv, sys
from pathlib import Path
rows = [r for f in sorted(Path(sys.argv[1]).glob("search*.csv")) for r in csv.DictReader(open(f))]
full = [r for r in rows if r["epochs"] == max(rows, key=lambda r: int(r["epochs"]))["epochs"]
        and r["status"] == "completed"]
print(min(full, key=lambda r: abs(float(r["nonzero_fraction"]) - float(sys.argv[2])))["lam"])
EOF
)"
  fi
  adrop train -m seed=1,2 "method=${METHOD}" "${SET}" "hydra.sweep.dir=${SWEEP_DIR}/${METHOD}/seeds" \
    "${COMMON[@]}" || STATUS=1
done
exit ${STATUS}
