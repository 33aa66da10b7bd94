"""The CUDA toolkit's ``ptxas``, for the tests and benchmarks that assemble generated PTX
without a GPU (``ptxas -arch=sm_90`` rejects what the driver's JIT would reject and ``-v``
reports registers and spills). Looked up where the toolkit usually is: $CUDA_HOME/bin,
$CUDA_PATH/bin, /usr/local/cuda/bin, then PATH."""

import os
import shutil


def find_ptxas():
    """The path of ptxas, or None when no CUDA toolkit is installed."""
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.access(os.path.join(root, "bin", "ptxas"), os.X_OK):
            return os.path.join(root, "bin", "ptxas")
    return shutil.which("ptxas")
