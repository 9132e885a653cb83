"""Tools for testing ding_ray on several hosts built on one machine: ``ding_ray.testing.hosts``
(network namespaces, one Ray node each) and ``ding_ray.testing.netdelay`` (packet delay)."""
