#!/usr/bin/env bash
# Every completed run under the folders given, exported as onnx (`adrop export --format onnx`) into a temporary
# folder: each export re-evaluates the run's test error from the exported network alone and is written only if it
# equals the run's (otherwise adrop export says so and exits 2). One line per run; exits 1 if any export failed.
# Runs that did not complete (failed, stopped, still training) are counted and skipped.
#
#   DATA=../shared/data scripts/check_exports.sh outputs/structured_lenet5_e200
set -uo pipefail
if [ $# -eq 0 ]; then echo "usage: DATA=<folder holding MNIST/raw> $0 FOLDER..." >&2; exit 2; fi
DATA=${DATA:-${ADROP_DATA:-data}}
TMP=$(mktemp -d)
trap 'rm -rf "${TMP}"' EXIT
STATUS=0 CHECKED=0 SKIPPED=0
while IFS= read -r summary; do
  run=$(dirname "${summary}")
  if ! python -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])).get("status") != "completed")' "${summary}"; then
    SKIPPED=$((SKIPPED + 1))
    continue
  fi
  CHECKED=$((CHECKED + 1))
  printf '%s: ' "${run}"
  adrop export "${run}" --format onnx --data "${DATA}" --out "${TMP}/${CHECKED}.onnx" 2>&1 || STATUS=1
done < <(find "$@" -name summary.json | sort)
echo "${CHECKED} completed runs checked, ${SKIPPED} not completed skipped:" \
     "$([ "${STATUS}" = 0 ] && echo "each export reproduces its run's test error" || echo "some exports FAILED")"
exit "${STATUS}"
