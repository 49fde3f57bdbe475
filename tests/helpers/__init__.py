"""Fixtures and helpers shared by several test modules. A test module imports what it shares from here
(or from ``bench/lib`` when a bench uses it too, e.g. ``bench.lib.pools.write_pools``), never from
another test module."""
