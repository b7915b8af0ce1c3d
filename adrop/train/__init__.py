"""`adrop train`: the deep-network training of the paper's Sec. 5 (the command: adrop/commands/train.py).

    schema.py    the configuration schema      settings.py  a configuration resolved and checked, once
    data.py      datasets as tensors           model.py     the networks of sparse layers
    engine.py    the one training engine       optim.py     its Adam (K configurations, one buffer)
    runtime.py   device, seeds, compile        evaluate.py  masked errors, sparsity
    run_files.py what a run leaves, and its checkpoint       stacked_jobs.py  a sweep's jobs as stacks
"""
