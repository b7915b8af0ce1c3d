"""The Hydra app of `adrop train`: a job and how it ends, the checks before any folder exists, the help."""
