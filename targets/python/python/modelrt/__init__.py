"""modelrt: run precompiled modelrt bundles (.mrt) from Python with numpy arrays, and, with the ``compile`` extra
(``pip install 'modelrt[compile]'``), compile ONNX models into them.

``modelrt.load(path, device="auto")`` returns a ``Model``; ``Model.run({name: array})`` returns a dict of output
arrays. ``modelrt.compile(model, output, target=...)`` runs the same compile as ``modelrt compile`` and returns the
bundle's path. The runtime is the Rust extension ``modelrt._native``.
"""

from ._compile import compile, convert
from ._native import Error, Model, TensorInfo, __version__, _rust_allocations, load

__all__ = ["Error", "Model", "TensorInfo", "__version__", "_rust_allocations", "compile", "convert", "load"]
