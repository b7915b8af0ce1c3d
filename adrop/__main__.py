"""`python -m adrop ...` is the same as `adrop ...`."""
import sys

from adrop.cli import main

sys.exit(main())
