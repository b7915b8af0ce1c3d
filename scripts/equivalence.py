"""Now `adrop report --equivalence REFERENCE SWEEP...` (adrop.report.equivalence); this script stays for the commands
the result pages show:

    python scripts/equivalence.py SWEEP [SWEEP ...] --reference logsum [--margin 0.001] [--out FOLDER]
        [--pool EARLIER_OUT ...]
"""
import sys

from adrop.report.equivalence import main

if __name__ == "__main__":
    sys.exit(main())
