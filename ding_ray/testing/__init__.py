"""Tools for testing ding_ray on several hosts built on one machine (network namespaces)."""

from ding_ray.testing.hosts import Host, Hosts

__all__ = ["Host", "Hosts"]
