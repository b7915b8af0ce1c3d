"""Sweeps: jobs trained as stacks, stacks as cluster jobs, what the jobs ended as."""
