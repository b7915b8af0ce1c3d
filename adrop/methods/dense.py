"""No sparsification: the dense baseline every comparison needs. Zeros count only if a weight is exactly 0."""

from .base import Method, register


@register
class Dense(Method):
    name = "dense"
