"""Shared test settings: hypothesis stays fast and deterministic on 2 cores."""
from hypothesis import HealthCheck, settings

settings.register_profile("adrop", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("adrop")
