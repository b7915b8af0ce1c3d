"""The `adrop` subcommands, one module each (adrop/cli.py dispatches to them): penalty, train, report, export,
bench_inference. Each parses its own arguments, reports a user's error in one line and returns an exit code."""
