#!/usr/bin/env bash
# Every method at one sparsity: per method, lam searched for TARGET nonzero (within
# 5%) with hydra/sweeper=lam_search on seed 0 in the paper's LeNet-300-100 setting (short rounds of a tenth of the
# epochs, then full ones), then seeds 1 and 2 trained at the lam found (the search's then_seeds: its full run closest
# to the target). Magnitude pruning takes the target directly.
#
#   scripts/reproduce/matched_sparsity.sh             all methods, target 0.02, 200 epochs
#   METHODS="logsum adaprox" TARGET=0.05 scripts/reproduce/matched_sparsity.sh \
#     hydra.launcher.n_jobs=1
#   EPOCHS=10 scripts/reproduce/matched_sparsity.sh   (arguments go to every adrop train)
#   SEARCH_OVERRIDES="hydra.sweeper.rounds=6" METHODS=eta_trick ...      (hydra.sweeper.* for the search only)
#
# Writes ${SWEEP_DIR} (default outputs/multirun/matched_${TARGET}_e${EPOCHS})/<method>/search: the search, its
# search.csv, and seeds 1 and 2. An interrupted method continues where it stopped: run the same
# command. With RESULTS set, each method's files go there as soon as its seeds finish: RESULTS/<method>/ gets
# `adrop report` of its two sweeps (results.csv, histories.csv, figures) and its search*.csv, what
# `adrop report --matched RESULTS/* --target TARGET --epochs EPOCHS` reads (seed 0's run closest to the
# target with seeds 1 and 2). A method whose run within tolerance errs above MAX_VAL_ERROR on validation (default 0.5:
# a network at chance) has failed at that sparsity: its search exits 1 and no seeds train. A search that did not land
# is reported to RESULTS/<method> all the same (with a file search_missed), and again once a rerun lands.
set -euo pipefail
EPOCHS=${EPOCHS:-200}
TARGET=${TARGET:-0.02}
MAX_VAL_ERROR=${MAX_VAL_ERROR:-0.5}  # a run within tolerance erring more failed at that sparsity: no seeds trained
METHODS=${METHODS:-"logsum eta_trick adaprox adatikhonov adaptive_dropout vardrop vardrop_lr vardrop_lr_ar hard_concrete magnitude_pruning"}
DATA=${DATA:-${ADROP_DATA:-data}}  # MNIST's root (the folder holding MNIST/raw/): DATA, else $ADROP_DATA, else data/
SWEEP_DIR=${SWEEP_DIR:-outputs/multirun/matched_${TARGET}_e${EPOCHS}}
STATUS=0
COMMON=(experiment=paper_lenet300 "epochs=${EPOCHS}" "data.root=${DATA}" progress=never hydra/launcher=stacked "$@")

for O in ${SEARCH_OVERRIDES:-}; do  # the search's own settings only: seeds 1 and 2 must train as seed 0's search did
  case "$O" in
    hydra.sweeper.*) ;;
    *) echo "matched_sparsity.sh: SEARCH_OVERRIDES takes hydra.sweeper.* only, not $O" >&2; exit 2 ;;
  esac
done
MISSED=search_missed  # marks RESULTS/<method> as the report of a search that did not land (no seeds)
report_missed() {  # the search's runs reported all the same (adrop report --matched names the method below its table)
  local out="${RESULTS:-}/${METHOD}"
  [ -n "${RESULTS:-}" ] && [ ! -e "${out}/results.csv" ] && [ -d "${SWEEP_DIR}/${METHOD}/search" ] || return 0
  adrop report "${SWEEP_DIR}/${METHOD}" --out "${out}" > /dev/null && touch "${out}/${MISSED}"
  cp -n "${SWEEP_DIR}/${METHOD}"/search/search*.csv "${RESULTS}/${METHOD}/" 2> /dev/null || true
}
for METHOD in ${METHODS}; do
  adrop train -m hydra/sweeper=lam_search "hydra.sweeper.target_nonzero=${TARGET}" seed=0 "method=${METHOD}" \
    'hydra.sweeper.then_seeds=[1,2]' "hydra.sweeper.max_val_error=${MAX_VAL_ERROR}" \
    "hydra.sweep.dir=${SWEEP_DIR}/${METHOD}/search" "${COMMON[@]}" ${SEARCH_OVERRIDES:-} || {
      rc=$?; [ "${rc}" -ge 128 ] && exit "${rc}"  # interrupted (130, 143): stop, nothing reported as missed
      STATUS=1; report_missed; continue; }
  if [ -n "${RESULTS:-}" ] && [ -e "${RESULTS}/${METHOD}/${MISSED}" ]; then  # a missed search's report: made again
    rm -r "${RESULTS:?}/${METHOD}"
  fi
  if [ -n "${RESULTS:-}" ] && [ ! -e "${RESULTS}/${METHOD}/results.csv" ]; then  # reported once, when first done
    adrop report "${SWEEP_DIR}/${METHOD}" --out "${RESULTS}/${METHOD}" > /dev/null || STATUS=1
    cp -n "${SWEEP_DIR}/${METHOD}"/search/search*.csv "${RESULTS}/${METHOD}/" || STATUS=1
  fi
done
exit ${STATUS}
