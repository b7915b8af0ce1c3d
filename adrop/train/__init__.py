"""`adrop train`: the deep-network training of the paper's Sec. 5 (the command: adrop/commands/train.py).

app.py        the Hydra app: a job, how it ends      help_page.py  `adrop train --help`, without torch
schema.py     the configuration schema               settings.py   a configuration resolved and checked, once
hooks.py      checks before any folder exists        errors.py     every fault as one line
datasets.py   data sets as raw arrays                data.py       datasets as tensors on the device
network.py    any nn.Module made trainable           networks.py   the built-in networks (cifar_networks.py)
stacking.py   K copies of modules that hold tensors  engine.py     the one training engine
optim.py      its Adam (K configurations, one buffer)  schedules.py  lr and penalty-weight schedules
runtime.py    device, seeds, compile, signals        evaluate.py   masked errors, sparsity
cost.py       what a sparse network costs            run_files.py  what a run leaves, and its checkpoint
tracking.py   TensorBoard and MLflow logging         sweep_outcomes.py  what a sweep's jobs ended as
stacked_jobs.py  a sweep's jobs as stacks            cluster.py    stacks as cluster jobs (submitit)
"""
