"""Data: raw arrays from the data sets, tensors on the training device, text as tokens."""
