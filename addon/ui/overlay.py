"""Viewport overlay: the active limb's elbow circle, feasible arcs, elbow point and axis.

Data path (plain functions, tested without a GPU):

* :func:`limb_view` — what the panel and the overlay show about a limb, derived from its
  cached :class:`~.solve.LimbStatus` (feasible intervals, swivel), the limb's current
  goal and the pose as written. It never solves the pose; it is recomputed only when the
  limb's status object changes (i.e. after a solve), else served from a cache.
* :func:`world_geometry` — :func:`core.swivel_arcs` points in the shoulder frame →
  world-space line segments (feasible / infeasible), elbow point and axis.

The draw handler (``SpaceView3D.draw_handler_add``, ``POST_VIEW``) only uploads that
geometry and draws it; it is added by :func:`register`, removed by :func:`unregister`,
and draws while ``WindowManager.limber_overlay`` is on. In background Blender the gpu
module cannot draw; the handler then does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np
from bpy.props import BoolProperty
from numpy.typing import NDArray

from ...core import (
    LimberError,
    PoseGoal,
    SwivelArcs,
    blocking_limits,
    limits_at_bound,
    solve_limb,
    swivel_arcs,
    transform_points,
)
from ..bridge import rig as mapping
from ..bridge.rig import MappingError
from ..run import solve

FloatArray = NDArray[np.float64]

#: Samples around the elbow circle.
SAMPLES = 96
#: RGBA colours: feasible arcs, infeasible arcs, elbow point, shoulder–wrist axis.
FEASIBLE_COLOR = (0.25, 0.85, 0.35, 1.0)
INFEASIBLE_COLOR = (0.95, 0.25, 0.2, 1.0)
ELBOW_COLOR = (1.0, 0.85, 0.1, 1.0)
AXIS_COLOR = (0.55, 0.7, 1.0, 0.8)
LINE_WIDTH = 2.5  # pixels
POINT_SIZE = 9.0  # pixels


@dataclass(frozen=True, eq=False)
class LimbView:
    """A limb's display data (runtime only).

    Attributes:
        arcs: :class:`core.SwivelArcs` in the limb's shoulder frame (armature units).
        shoulder_world: 4×4 world matrix of the shoulder frame when the view was made.
        blocking: limits that leave no feasible swivel (:func:`core.blocking_limits`).
        at_bound: joint angles of the written pose on a limit (:func:`core.limits_at_bound`).
    """

    arcs: SwivelArcs
    shoulder_world: FloatArray
    blocking: tuple[str, ...]
    at_bound: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class WorldGeometry:
    """World-space vertices ready to upload (float32-friendly (K, 3) arrays).

    ``feasible`` / ``infeasible``: pairs of vertices (``LINES``): segment i joins circle
    samples i and i+1 and is feasible when both ends are. ``elbow``: (1, 3).
    ``axis``: (2, 3) shoulder → wrist goal. ``circle``: (n, 3) all samples.
    """

    feasible: FloatArray
    infeasible: FloatArray
    elbow: FloatArray
    axis: FloatArray
    circle: FloatArray


#: (object name, limb name) → (status object the view was made from, view or None).
_VIEWS: dict[tuple[str, str], tuple[Any, LimbView | None]] = {}


def clear_cache() -> None:
    _VIEWS.clear()


def world_geometry(arcs: SwivelArcs, matrix: Any) -> WorldGeometry:
    """Transform a single goal's :class:`core.SwivelArcs` to world space by ``matrix``.

    Args:
        arcs: arcs of one goal (points (n, 3)) in the shoulder frame.
        matrix: 4×4 (numpy or mathutils) shoulder frame → world; may scale.
    """
    m = np.asarray(matrix, dtype=np.float64).reshape(4, 4)
    pts = transform_points(m, np.asarray(arcs.points))
    nxt = np.roll(pts, -1, axis=0)
    ok = np.asarray(arcs.feasible, dtype=bool)
    seg_ok = ok & np.roll(ok, -1)
    pairs = np.stack([pts, nxt], axis=1)  # (n, 2, 3)
    return WorldGeometry(
        feasible=pairs[seg_ok].reshape(-1, 3),
        infeasible=pairs[~seg_ok].reshape(-1, 3),
        elbow=transform_points(m, np.asarray(arcs.elbow)[None]),
        axis=transform_points(m, np.stack([arcs.shoulder, arcs.wrist])),
        circle=pts,
    )


def limb_view(obj: Any, settings: Any, depsgraph: Any = None) -> LimbView | None:
    """Display data of one limb from its cached status; None if it has not been solved by
    the analytic solver (numeric solvers have no swivel circle).

    ``depsgraph``: an evaluated depsgraph (default: the view layer's, as drawn — it is
    not evaluated again here). Cached per status object: redraws between solves cost a
    dictionary lookup.
    """
    key = (obj.name, settings.name)
    status = solve.STATUS.get(key)
    if status is None or not status.solved or getattr(status, "solver", "ANALYTIC") != "ANALYTIC":
        _VIEWS.pop(key, None)
        return None
    hit = _VIEWS.get(key)
    if hit is not None and hit[0] is status:
        return hit[1]
    view: LimbView | None
    try:
        view = _make_view(obj, settings, status, depsgraph)
    except (MappingError, LimberError, ValueError, KeyError, AttributeError, TypeError):
        view = None
    _VIEWS[key] = (status, view)
    return view


def _make_view(obj: Any, settings: Any, status: Any, depsgraph: Any) -> LimbView | None:
    """The view of a limb from the pipeline's request (the goal and the shoulder frame as
    the solve saw them) and the pose as written."""
    if settings.target is None:
        return None
    dg = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
    rig = solve.rig_for(obj, settings)
    req = solve.limb_request_at(obj, settings, dg)
    limb = req.limb
    r1, theta, r2 = mapping.read_limb_pose(obj, rig)  # the pose as written by the solve
    goal, wrist = req.goal, req.kwargs.get("wrist")
    swivel, intervals = status.swivel, status.feasible_swivel
    if settings.goal_type == "AIM":
        # An aim goal's swivel lives on its own hand circle: show the circle of the pose it
        # was solved to (the effector frame as written), its intervals and the elbow's φ.
        fk = limb.forward(r1, theta, r2)
        goal, wrist, intervals = PoseGoal(fk[:3, 3], fk[:3, :3]), None, None
        swivel = float(solve_limb(limb, goal, elbow_target=limb.elbow_position(r1)).swivel)
    arcs = swivel_arcs(limb, goal, SAMPLES, swivel=swivel, intervals=intervals, wrist=wrist)
    blocking: tuple[str, ...] = ()
    if not status.feasible_swivel:
        blocking = blocking_limits(limb, goal, wrist=wrist)
    at_bound = limits_at_bound(limb, r1, theta, r2)
    return LimbView(arcs=arcs, shoulder_world=req.frame[0], blocking=blocking,
                    at_bound=at_bound)


def active_limb(context: Any) -> tuple[Any, Any] | tuple[None, None]:
    """(armature object, active limb settings) of the context, or (None, None)."""
    obj = getattr(context, "active_object", None) or getattr(context, "object", None)
    if obj is None or obj.type != "ARMATURE" or not hasattr(obj, "limber"):
        return None, None
    data = obj.limber
    if not 0 <= data.active_limb_index < len(data.limbs):
        return obj, None
    return obj, data.limbs[data.active_limb_index]


def overlay_geometry(context: Any) -> WorldGeometry | None:
    """The geometry the overlay draws in this context (None: nothing to draw)."""
    obj, settings = active_limb(context)
    if settings is None:
        return None
    view = limb_view(obj, settings, context.view_layer.depsgraph)
    if view is None:
        return None
    return world_geometry(view.arcs, view.shoulder_world)


# --------------------------------------------------------------------------------------
# Drawing (gpu) — only uploads and draws
# --------------------------------------------------------------------------------------


def gpu_available() -> bool:
    """Whether the gpu module can draw here (not in background Blender)."""
    return not bpy.app.background


def draw_callback() -> None:
    """``POST_VIEW`` draw handler: draw the active limb's overlay when it is switched on."""
    context = bpy.context
    wm = context.window_manager
    if not getattr(wm, "limber_overlay", False) or not gpu_available():
        return
    try:
        geom = overlay_geometry(context)
    except (MappingError, LimberError, ReferenceError):
        return
    if geom is None:
        return
    try:
        _draw(geom, context.region)
    except (ValueError, TypeError, SystemError) as exc:  # a gpu API this Blender lacks
        if not _REPORTED:
            _REPORTED.append(exc)
            print(f"Limber overlay: cannot draw ({exc}); turn the overlay off")
    finally:
        import gpu

        gpu.state.blend_set("NONE")


#: The first drawing error (reported once, not on every redraw).
_REPORTED: list[Exception] = []


def _draw(geom: WorldGeometry, region: Any) -> None:
    """Upload and draw: lines (feasible, infeasible, axis), then the elbow point."""
    import gpu
    from gpu_extras.batch import batch_for_shader

    line = gpu.shader.from_builtin("POLYLINE_UNIFORM_COLOR")
    try:  # Blender 4.2+ builds may lack the point shader with a size uniform
        point = gpu.shader.from_builtin("POINT_UNIFORM_COLOR")
        sized = True
    except ValueError:
        point = gpu.shader.from_builtin("UNIFORM_COLOR")
        sized = False
    gpu.state.blend_set("ALPHA")
    gpu.state.depth_test_set("NONE")
    line.bind()
    line.uniform_float("viewportSize", (region.width, region.height))
    line.uniform_float("lineWidth", LINE_WIDTH)
    for verts, color in (
        (geom.feasible, FEASIBLE_COLOR),
        (geom.infeasible, INFEASIBLE_COLOR),
        (geom.axis, AXIS_COLOR),
    ):
        if len(verts):
            line.uniform_float("color", color)
            batch_for_shader(line, "LINES",
                             {"pos": verts.astype(np.float32)}).draw(line)  # type: ignore[dict-item]
    point.bind()
    point.uniform_float("color", ELBOW_COLOR)
    if sized:
        point.uniform_float("size", POINT_SIZE)
    else:
        gpu.state.point_size_set(POINT_SIZE)
    batch_for_shader(point, "POINTS",
                     {"pos": geom.elbow.astype(np.float32)}).draw(point)  # type: ignore[dict-item]


_HANDLE: list[Any] = []


def _redraw(_self: Any, context: Any) -> None:
    for window in getattr(context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()


def register() -> None:
    """Add ``WindowManager.limber_overlay`` and the draw handler (once)."""
    bpy.types.WindowManager.limber_overlay = BoolProperty(  # type: ignore[attr-defined,func-returns-value]
        name="Swivel Overlay",
        description="Draw the active limb's elbow circle in the viewport: feasible swivel arcs "
        "green, arcs outside the joint limits red, the current elbow yellow, the "
        "shoulder-to-wrist axis blue (display only, not saved)",
        default=False,
        update=_redraw,
    )
    unregister_handler()
    _HANDLE.append(
        bpy.types.SpaceView3D.draw_handler_add(draw_callback, (), "WINDOW", "POST_VIEW")
    )


def unregister_handler() -> None:
    while _HANDLE:
        bpy.types.SpaceView3D.draw_handler_remove(_HANDLE.pop(), "WINDOW")


def unregister() -> None:
    """Remove the draw handler and the property; forget cached views."""
    unregister_handler()
    if hasattr(bpy.types.WindowManager, "limber_overlay"):
        del bpy.types.WindowManager.limber_overlay
    clear_cache()
