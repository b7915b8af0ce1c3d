"""adrop's Hydra plugins: the sweeper that reports failed jobs (and never rewrites a sweep's multirun.yaml).

Hydra finds plugins in the hydra_plugins namespace package; an editable install hides this folder from that scan,
so adrop.train.command.app also registers them by hand (Plugins.register, Hydra's documented way).
"""
