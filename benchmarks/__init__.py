"""Speed and scale benchmarks: optzoo against its anchors, side by side in one process.

Run ``python -m benchmarks NAME [options]``; results are kept in ``benchmarks/results/NAME.json``.
"""
