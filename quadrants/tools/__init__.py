"""``qd.tools``: helpers around Quadrants programs.

- ``qd.tools.diagnose``: ``python -m quadrants.tools.diagnose`` prints the Python, system and
  package facts that a bug report needs, and which archs start;
- ``qd.tools.PLYWriter`` / ``qd.tools.np2ply`` and ``qd.tools.write_vtk`` / ``qd.tools.vtk``:
  the reference's mesh and VTK exporters. They are not provided by this package: using them
  raises NotImplementedError.
"""

from quadrants.tools import diagnose, np2ply, vtk
from quadrants.tools.np2ply import PLYWriter
from quadrants.tools.vtk import write_vtk

__all__ = ["diagnose", "np2ply", "vtk", "PLYWriter", "write_vtk"]
