"""No sparsification: the dense baseline every comparison needs. Zeros count only if a weight is exactly 0."""
from .base import Method, register


@register
class Dense(Method):
    name = "dense"
    # a step of matrix products and Adam: stacks of 4, one per core, 1.68x the basic launcher (1 x 2: 1.55x)
    cpu_stack = 4
