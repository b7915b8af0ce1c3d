#!/usr/bin/env bash
# Every completed run under the folders given, exported as onnx into a temporary folder and checked against its run's
# test error: now `adrop export --check FOLDER... --data DATA`; this script stays for the commands the result pages show.
#
#   DATA=../shared/data scripts/check_exports.sh outputs/structured_lenet5_e200
set -uo pipefail
if [ $# -eq 0 ]; then echo "usage: DATA=<folder holding MNIST/raw> $0 FOLDER..." >&2; exit 2; fi
exec adrop export --check "$@" --format onnx --data "${DATA:-${ADROP_DATA:-data}}"
