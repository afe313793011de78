"""Limber benchmarks (not part of the extension; run from the repository root).

``python -m benchmarks.limb [--quick] [--out FILE]`` times the analytic limb solver.
Speed is measured here only, never asserted in tests.
"""
