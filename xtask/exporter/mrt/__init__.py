"""The modelrt exporter library: ONNX models, compile3 pickles and tinygrad programs to the neutral manifest.

Entry points are export.py and conformance_worker.py next to this package; they pin the environment before any
module here imports tinygrad. Module map: docs/architecture.md.
"""
