"""`adrop train`: the deep-network training of the paper's Sec. 5 (see app.py for usage).

    schema.py    the configuration schema      data.py      datasets as tensors on the device
    model.py     the MLP of sparse layers      loop.py      the method-agnostic training loop
    evaluate.py  masked errors, sparsity       run_files.py what a run leaves, and its checkpoint
"""
