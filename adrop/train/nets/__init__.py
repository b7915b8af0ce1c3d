"""Networks: any nn.Module made the method's sparse network, the built-in networks, stacked copies of modules."""
