"""Benchmarks that use the product as its users do, so their figures are what a user gets.

Each module is one benchmark (`python -m benchmarks.<name>`, listed in `make bench`) writing
benchmarks/results/<name>.json; `report` turns those files into docs/benchmarks.md. What
several share lives in `harness` (the product through the `corpus` command and HTTP, the sets'
scorers, percentiles, result files) and `synthetic` (generated corpora at scale): benchmarks
import those two, never each other or the tests.
"""
