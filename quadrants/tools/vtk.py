"""``qd.tools.write_vtk``: the reference's VTK exporter, not provided by this package."""


def write_vtk(scalar_field, filename):
    """Not provided: raises NotImplementedError."""
    raise NotImplementedError(
        "qd.tools.write_vtk is not provided by this package; write VTK files with pyevtk or "
        "meshio from scalar_field.to_numpy()"
    )


__all__ = ["write_vtk"]
