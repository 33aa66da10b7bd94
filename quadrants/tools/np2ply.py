"""``qd.tools.PLYWriter``: the reference's PLY exporter, not provided by this package."""


class PLYWriter:
    """Not provided: constructing one raises NotImplementedError."""

    def __init__(self, num_vertices, num_faces=0, face_type="tri", comment="created by PLYWriter"):
        raise NotImplementedError(
            "qd.tools.PLYWriter is not provided by this package; write PLY files with a mesh "
            "library (e.g. plyfile or trimesh) from field.to_numpy() data"
        )


__all__ = ["PLYWriter"]
