"""What the subcommands share so that every error a user can cause is one line on stderr.

Parser   argparse's parser, whose refusals (an unknown option, a missing argument) are one line and exit status 2,
         not its usage block first
said     an error's line: a write the system refused in plain words ("cannot write <path>: permission denied")
"""

from __future__ import annotations

import argparse
import sys


class Parser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"{self.prog}: error: {message} ({self.prog} --help lists what it takes)", file=sys.stderr)
        sys.exit(2)


def said(err: Exception) -> str:
    from adrop.train.run_folder.run_files import plain

    return plain(err)
