import os

from hypothesis import HealthCheck, settings

# CI runs derandomised so that a red build is reproducible; locally hypothesis explores.
settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "ci",
    parent=settings.get_profile("default"),
    derandomize=True,
    database=None,
)
settings.load_profile("ci" if os.environ.get("CI") else "default")
