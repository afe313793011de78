"""Geometry helpers of the core (rotations, vectors, rigid and affine transforms)."""
