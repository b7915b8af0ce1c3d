"""`python -m adrop ...` is the same as `adrop ...`."""

from adrop.cli import entry

entry()
