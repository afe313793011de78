"""Geometry vocabulary of the core: rotations (matrices, quaternions, axis-angle, Blender
Euler orders) and the component-wise 3-vector kernel (:mod:`.vec3`)."""

from .rotations import (
    EULER_ORDERS,
    EulerSpec,
    angle_in_range,
    axis_angle_to_matrix,
    check_order,
    check_rotation,
    euler_spec,
    euler_to_matrix,
    matrix_to_axis_angle,
    matrix_to_euler,
    matrix_to_euler_families,
    matrix_to_quat,
    orthonormalize,
    quat_to_matrix,
    relative_angle,
    rodrigues,
    rotation_angle_between,
    wrap_angle,
)

__all__ = [
    "EULER_ORDERS",
    "EulerSpec",
    "angle_in_range",
    "axis_angle_to_matrix",
    "check_order",
    "check_rotation",
    "euler_spec",
    "euler_to_matrix",
    "matrix_to_axis_angle",
    "matrix_to_euler",
    "matrix_to_euler_families",
    "matrix_to_quat",
    "orthonormalize",
    "quat_to_matrix",
    "rotation_angle_between",
    "relative_angle",
    "rodrigues",
    "wrap_angle",
]
