"""The training loop: the one engine (K configurations as one), its Adam, schedules, evaluation, collapse."""
