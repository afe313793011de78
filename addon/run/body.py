"""Per-frame work for a body: read → requests → :func:`core.solve_body` → write → verify.

:func:`solve_body_settings` is what :func:`.solve.solve_object` (hence ``limber.solve``,
live solving, live playback and ``limber.bake``) calls for each enabled body
(``Object.limber.bodies``):

1. *read*: the frame the root's location and rotation act in
   (:func:`..bridge.body.root_frame`, evaluated), each pin's target in it, the current
   pose as the start (the previous frame's while playing or baking);
2. *core*: :func:`core.solve_body` on the body's skeleton (:func:`body_rig_for`): the
   root, spine, neck and head numerically with strict priorities, each goaled limb
   analytically;
3. *write*: the whole configuration (the root's location and rotation, every bending
   bone, every limb);
4. *verify*: the depsgraph is evaluated once and every pin is measured on the evaluated
   pose. Where Blender's pose differs from the body's model (Rigify's helper bones and
   constraints) a pin can miss. Each goaled limb whose pin misses, or that the body did
   not pose exactly away from the ends of its reach (:func:`exact_limbs`), is solved
   again through the limb pipeline (:mod:`..bridge.requests`, :func:`core.solve_limb`)
   from the shoulder / hip frame Blender evaluated, with the swivel of the body's pose
   (the elbow / knee on the body's side, and a straight limb not turned about itself); a
   missing head aim likewise from its evaluated frame. Evaluated and measured again, a
   limb that still misses is re-solved with a corrected goal
   (:func:`..bridge.verify.corrected_goal`).

The body's status (kind ``"body"``) is its worst pin; each pin's is stored in its own
``status``. A solve that left a pin unmet is remembered (goals, pose and pins as they
stand after its write): solving again with all of them unchanged keeps that answer
instead of solving from the float32 pose (docs/decisions.md, "Full body beyond reach").
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core import (
    Body,
    BodyLimb,
    BodySettings,
    LimberError,
    Method,
    SolveSettings,
    affine_inverse,
    goal_in_frame,
    pose_swivel,
    solve,
    solve_body,
    solve_limb,
)
from ..bridge import body as body_map
from ..bridge import read, requests, verify
from ..bridge import rig as mapping
from ..bridge.body import BodyRig
from ..bridge.read import ReadError
from ..bridge.requests import AXES
from ..bridge.rig import ChainRig, LimbRig, MappingError
from ..bridge.write import write_chain, write_limb
from .solve import LimbStatus, bone_signature, effector_goal

#: Pin kinds that end a limb (the body's analytic units).
LIMB_KINDS = ("FOOT", "HAND")
#: Numeric tolerance of the body's levels (m / rad): far below Blender's float32 pose.
BODY_TOLERANCE = 1e-7

#: A goaled limb whose wrist / ankle the body put within this × the limb's length of the
#: ends of its reach (:attr:`core.Body.shells`) is finished from its evaluated frame.
NEAR_SHELL = 1e-3

#: Last status per (object name, body name).
BODY_STATUS: dict[tuple[str, str], LimbStatus] = {}
_RIGS: dict[tuple[str, str], tuple[tuple[Any, ...], BodyRig, Body]] = {}
_HEADS: dict[tuple[str, str, str], tuple[tuple[Any, ...], ChainRig]] = {}
#: Per (object name, body name), the last written solve that left a pin unmet: its Body,
#: its settings, and the goals, pose and status as they stand after its write.
_ANSWERS: dict[tuple[str, str], tuple[Body, tuple[Any, ...], Any, LimbStatus]] = {}


@dataclass(frozen=True)
class PinLimb:
    """A limb pin seen as limb settings by :func:`..bridge.read.read_limb` and
    :func:`..bridge.requests.limb_request`: its target and goal, and the swivel the
    body's limb solve used."""

    pin: Any
    name: str
    goal_type: str
    axis: str
    target: Any
    target_bone: str
    swivel: float = 0.0
    swivel_mode: str = "ANGLE"
    pole: Any = None

    @property
    def id_data(self) -> Any:
        return self.pin.id_data

    def path_from_id(self, prop: str) -> str:
        return f"{self.pin.path_from_id()}.{prop}"


def clear_caches() -> None:
    """Forget cached body rigs and statuses (with :func:`.solve.clear_caches`)."""
    _RIGS.clear()
    _HEADS.clear()
    _ANSWERS.clear()
    BODY_STATUS.clear()


def limb_pins(body: Any) -> list[Any]:
    """The body's foot and hand pins (each names a limb's three bones)."""
    return [p for p in body.pins if p.kind in LIMB_KINDS and p.upper_bone and p.lower_bone
            and p.tip_bone]


def goal_pins(body: Any) -> list[Any]:
    """The pins that are goals this frame: enabled, with a target."""
    return [p for p in body.pins if p.enabled and p.target is not None and p.tip_bone]


def body_rig_for(obj: Any, body: Any) -> tuple[BodyRig, Body]:
    """The (cached) :class:`~..bridge.body.BodyRig` and :class:`core.Body` of a body's
    settings; rebuilt when its bones or settings changed."""
    pins = limb_pins(body)
    head = [p.tip_bone for p in body.pins if p.kind == "HEAD" and p.tip_bone]
    bend = [b.name for b in body.bend_bones]
    tips = [p.tip_bone for p in pins] + head + bend
    try:
        bones = mapping.chain_bones(obj, body.root_bone, tips)
        sig: tuple[Any, ...] = (body.root_bone, tuple(bend), tuple(head), body.use_limits,
                                body.bend_range, obj.as_pointer(),
                                tuple((p.upper_bone, p.lower_bone, p.tip_bone) for p in pins))
        # the root's location is the Free joint's translation (read every frame)
        sig += tuple(bone_signature(pb, location=pb.name != body.root_bone) for pb in bones)
    except MappingError:
        sig = ()
    key = (obj.name, body.name)
    hit = _RIGS.get(key)
    if hit is not None and sig and hit[0] == sig:
        return hit[1], hit[2]
    limbs: dict[str, LimbRig] = {}
    for p in pins:
        limbs[p.name] = mapping.build_rig(obj, (p.upper_bone, p.lower_bone, p.tip_bone),
                                          use_limits=body.use_limits)
    rig = body_map.build_body(obj, body.root_bone, bend, limbs, head,
                              bend_range=float(body.bend_range), use_limits=body.use_limits)
    try:
        core_body = Body(rig.chain.skeleton, [BodyLimb(name, lr.upper, lr.lower, lr.end)
                                              for name, lr in limbs.items()])
    except LimberError as exc:
        raise MappingError(f"body {body.name!r}: {exc}") from exc
    _RIGS[key] = (sig, rig, core_body)
    return rig, core_body


def _goals(obj: Any, rig: BodyRig, pins: list[Any], frame: Any, depsgraph: Any
           ) -> list[Any]:
    """The core goals of the pins (targets in the root frame), in pin order."""
    goals = []
    inverse = affine_inverse(frame)
    for p in pins:
        t = read.target_world(p.target.evaluated_get(depsgraph), p.target_bone)
        axis = np.array(AXES[p.axis])
        if p.goal_type == "AIM" and p.kind in LIMB_KINDS:
            # the limb holds its end bone's rotation: aim with the held axis
            axis = mapping.read_rotation(obj.pose.bones[p.tip_bone]) @ axis
        g, _, _ = effector_goal(p.goal_type, goal_in_frame(frame, t, inverse=inverse), axis,
                                rig.chain.joint(p.tip_bone), float(p.weight), int(p.priority))
        goals.append(g)
    return goals


def _finish_limb(obj: Any, obj_eval: Any, rig: LimbRig, pin: Any, depsgraph: Any, *,
                 swivel: float = 0.0, goal_frame: Any = None, reads: Any = None
                 ) -> tuple[Any, dict[str, tuple[str, tuple[float, ...]]]]:
    """Solve one goaled limb through the limb pipeline from its evaluated shoulder / hip
    frame with the swivel φ ``swivel`` (the body's: its limb model is built from the same
    bones as the limb rig, so φ puts the elbow / knee where the body did, and for a
    straight limb, whose elbow gives no direction, keeps the upper bone's turn about its
    axis); returns (request, written). ``reads``: a request to solve again (its swivel
    kept) for the goal ``goal_frame``."""
    view = PinLimb(pin=pin, name=pin.name, goal_type=pin.goal_type, axis=pin.axis,
                   target=pin.target, target_bone=pin.target_bone, swivel=swivel)
    if reads is None:
        rd = read.read_limb(obj_eval, view, rig.bones, depsgraph, bool(rig.helpers))
        req = requests.limb_request(view, rig, rd)
    else:
        req = requests.with_goal(reads, view, goal_frame)
    sol = solve_limb(req.limb, req.goal, **req.kwargs)
    written = write_limb(obj, rig, sol.shoulder, float(sol.elbow),
                         requests.end_rotation(req, sol), None,
                         requests.lower_rotation(req, sol))
    return req, written


def _finish(obj: Any, rig: BodyRig, swivels: dict[str, float], pins: list[Any],
            st: LimbStatus, depsgraph: Any) -> dict[str, tuple[LimbRig, Any, Any]]:
    """Solve the limbs and the head among ``pins`` again from their frames as Blender
    evaluated them; each limb with the swivel of the pose the body wrote (``swivels``,
    :func:`start_swivels` of the body's solution). Returns per limb pin what
    :func:`_refine` needs."""
    obj_eval = obj.evaluated_get(depsgraph)
    finished: dict[str, tuple[LimbRig, Any, Any]] = {}
    for p in pins:
        if p.kind in LIMB_KINDS and p.name in rig.limbs:
            lr = rig.limbs[p.name]
            req, written = _finish_limb(obj, obj_eval, lr, p, depsgraph,
                                        swivel=swivels.get(p.name, 0.0))
            finished[p.name] = (lr, req, p)
            st.written.update(written)
        elif p.kind == "HEAD":
            st.written.update(_finish_head(obj, obj_eval, rig, p, depsgraph))
    return finished


def exact_limbs(core_body: Body, sol: Any) -> set[str]:
    """The goaled limbs the body's solution ``sol`` poses exactly in closed form, away
    from the ends of their reach: their analytic solve met the goal
    (``limb_reached``) and the wrist / ankle lies more than :data:`NEAR_SHELL` × the
    limb's length inside its shell. Where the body meets such a limb's pin on the
    evaluated pose, solving the limb again from its evaluated frame gives the same pose.
    Near the ends of its reach (a goal the body met where it is, possibly a hair inside
    the shell: :attr:`core.BodySettings.shell_margin`'s hysteresis) a float-level change
    of the shoulder moves a nearly straight limb's elbow visibly (its bend goes with the
    square root of the distance): the finish solves such a limb exactly."""
    frames = core_body.skeleton.forward(sol.q)
    out: set[str] = set()
    for bl, model, (u, _, e), (lo, hi), ok in zip(
            core_body.limbs, core_body.models, core_body.joints, core_body.shells,
            np.atleast_1d(sol.limb_reached).tolist(), strict=True):
        d = float(np.linalg.norm(frames[e, :3, 3] - frames[u, :3, 3]))
        band = NEAR_SHELL * model.length
        if ok and lo + band < d < hi - band:
            out.add(bl.name)
    return out


def _head_chain(obj: Any, rig: BodyRig, bone: str) -> ChainRig:
    """The head as a one-joint chain with the body's DOFs (cached with the body rig)."""
    key = (obj.name, rig.root, bone)
    hit = _HEADS.get(key)
    if hit is not None and hit[0][0] is rig:
        return hit[1]
    d = rig.chain.skeleton.joints[rig.chain.joint(bone)].dofs
    chain = mapping.build_chain(obj, bone, [bone], dofs={bone: d})
    _HEADS[key] = ((rig,), chain)
    return chain


def _finish_head(obj: Any, obj_eval: Any, rig: BodyRig, pin: Any, depsgraph: Any
                 ) -> dict[str, tuple[str, tuple[float, ...]]]:
    """The head pin's goal solved for the head bone alone from its evaluated frame."""
    chain = _head_chain(obj, rig, pin.tip_bone)
    t = read.target_world(pin.target.evaluated_get(depsgraph), pin.target_bone)
    goal, _, _ = effector_goal(pin.goal_type, goal_in_frame(mapping.root_frame(obj_eval, chain),
                                                            t), np.array(AXES[pin.axis]), 0)
    res = solve(chain.skeleton, [goal], mapping.read_chain_q(obj, chain), method=Method.DLS,
                settings=SolveSettings(max_iterations=50, tolerance=BODY_TOLERANCE,
                                       adaptive_damping=True))
    return write_chain(obj, chain, res.q)


def measure_pins(obj: Any, depsgraph: Any, body: Any, st: LimbStatus) -> None:
    """Measure every goal pin on the evaluated pose (no update here) into
    ``st.effectors`` (position, orientation, reached) and the worst into ``st``."""
    obj_eval = obj.evaluated_get(depsgraph)
    st.effectors = []
    for p in goal_pins(body):
        pos, ori = verify.effector_errors(obj_eval, p, depsgraph)
        st.effectors.append((pos, ori, verify.reached(pos, ori)))
    st.position_error = max((e[0] for e in st.effectors), default=0.0)
    st.orientation_error = max((e[1] for e in st.effectors), default=0.0)
    st.reached = all(e[2] for e in st.effectors)
    st.measured = "depsgraph"


def _refine(obj: Any, depsgraph: Any, body: Any, st: LimbStatus,
            finished: dict[str, tuple[LimbRig, Any, Any]]) -> None:
    """Re-solve limbs whose evaluated end bone misses with a corrected goal (at most
    :data:`..bridge.verify.REFINE_ROUNDS` rounds, while the error shrinks)."""
    pins = goal_pins(body)
    for _ in range(verify.REFINE_ROUNDS):
        obj_eval = obj.evaluated_get(depsgraph)
        again = False
        for p, (_, _, ok) in zip(pins, st.effectors, strict=True):
            if ok or p.name not in finished:
                continue
            rig, req, pin = finished[p.name]
            end = read.bone_world(obj_eval, rig.end)
            g = verify.corrected_goal(req, end)
            req2, written = _finish_limb(obj, obj_eval, rig, pin, depsgraph, goal_frame=g,
                                         reads=req)
            finished[p.name] = (rig, req2, pin)
            st.written.update(written)
            again = True
        if not again:
            return
        before = st.position_error + st.orientation_error
        depsgraph.update()
        measure_pins(obj, depsgraph, body, st)
        if st.reached or st.position_error + st.orientation_error > 0.5 * before:
            return


def solve_body_settings(obj: Any, obj_eval: Any, body: Any, depsgraph: Any, *,
                        write: bool = True) -> LimbStatus:
    """Solve one body (``LIMBER_PG_body``) at the current frame and write its pose (see
    the module docstring). Without ``write`` only the core solve runs (the status then
    has the model's errors)."""
    t0 = time.perf_counter()
    st = LimbStatus(object=obj.name, limb=body.name, kind="body", solver="BODY", proven=True)
    pins = goal_pins(body)
    if not len(body.pins):
        st.message = "no pins"
    elif not pins:
        st.message = "skipped: no pin has a target"
    else:
        try:
            _solve(obj, obj_eval, body, depsgraph, st, pins, write)
        except (MappingError, ReadError, LimberError, ValueError) as exc:
            st.message = f"skipped: {exc}"
            st.solved = False
    st.total_us = (time.perf_counter() - t0) * 1e6
    BODY_STATUS[(obj.name, body.name)] = st
    return st


def _solve(obj: Any, obj_eval: Any, body: Any, depsgraph: Any, st: LimbStatus,
           pins: list[Any], write: bool) -> None:
    rig, core_body = body_rig_for(obj, body)
    frame = body_map.root_frame(obj_eval, rig)
    goals = _goals(obj, rig, pins, frame, depsgraph)
    q0 = mapping.read_chain_q(obj, rig.chain)
    settings = BodySettings(tolerance=BODY_TOLERANCE, max_iterations=int(body.max_iterations),
                            use_limits=bool(body.use_limits), swivel=start_swivels(core_body, q0))
    last = _ANSWERS.pop((obj.name, body.name), None)
    if (write and last is not None and last[0] is core_body and np.array_equal(last[2], q0)
            and last[1] == _inputs_key(goals, settings)):
        # the pose is this body's own last answer at the same targets: where every pin
        # measures as it did, it stays, with its status (beyond reach a pin in conflict
        # lies in a flat valley, and a solve from the answer as Blender stores it, in
        # float32, can still move the body by millimetres; docs/decisions.md)
        measure_pins(obj, depsgraph, body, st)
        if st.effectors == last[3].effectors:
            for f in dataclasses.fields(LimbStatus):
                setattr(st, f.name, getattr(last[3], f.name))
            st.solve_us = 0.0
            _ANSWERS[(obj.name, body.name)] = last
            return
    t1 = time.perf_counter()
    sol = solve_body(core_body, goals, q0, settings)
    st.solve_us = (time.perf_counter() - t1) * 1e6
    st.solved = True
    st.iterations = int(sol.iterations)
    st.stop_reason = str(getattr(sol.reason, "name", sol.reason))
    st.within_limits = bool(sol.within_limits)
    st.effector_errors = tuple(float(x) for x in np.atleast_1d(sol.goal_error))
    st.reachable = bool(np.all(sol.reached))
    notes: list[str] = []
    if not write:
        st.effectors = [(float(e), 0.0, bool(r)) for e, r in zip(sol.goal_error, sol.reached,
                                                                  strict=True)]
        st.position_error = max((e[0] for e in st.effectors), default=0.0)
        st.orientation_error = 0.0
        st.reached = st.reachable
        st.measured = "model"
        notes.append("not written: model errors")
    else:
        st.written = write_chain(obj, rig.chain, sol.q, st.written_locations)
        depsgraph.update()
        measure_pins(obj, depsgraph, body, st)
        exact = exact_limbs(core_body, sol)
        todo = [p for p, e in zip(pins, st.effectors, strict=True)
                if (p.name in rig.limbs and p.kind in LIMB_KINDS
                    and not (e[2] and p.name in exact))
                or (p.kind == "HEAD" and not e[2])]
        if todo:
            limbs = {p.name for p in todo}
            finished = _finish(obj, rig, start_swivels(core_body, sol.q, limbs), todo, st,
                               depsgraph)
            depsgraph.update()
            measure_pins(obj, depsgraph, body, st)
            if not st.reached:
                _refine(obj, depsgraph, body, st, finished)
        yielding = [p.name for p, e in zip(pins, st.effectors, strict=True)
                    if not e[2] and yields(p, pins)]
        if yielding:
            notes.append(f"{', '.join(yielding)} yield to higher-priority pins")
    st.notes = notes
    st.message = verify.status_message(st)
    if write and not st.reached:  # the inputs as the next solve will read them
        after = _goals(obj, rig, pins, body_map.root_frame(obj.evaluated_get(depsgraph), rig),
                       depsgraph)
        _ANSWERS[(obj.name, body.name)] = (core_body, _inputs_key(after, settings),
                                           mapping.read_chain_q(obj, rig.chain),
                                           dataclasses.replace(st))


def _inputs_key(goals: list[Any], settings: BodySettings) -> tuple[Any, ...]:
    """The core goals (every field; arrays by their bytes) and the settings the pose does
    not give, as a comparable value."""
    return (settings.max_iterations, settings.use_limits, settings.tolerance, *(
        (type(g).__name__, *(v.tobytes() if isinstance(v, np.ndarray) else v
                             for v in (getattr(g, f.name) for f in dataclasses.fields(g))))
        for g in goals))


def start_swivels(core_body: Body, q0: Any, names: set[str] | None = None
                  ) -> dict[str, float]:
    """Each limb's swivel φ in the pose ``q0`` (:func:`core.pose_swivel`; a limb whose
    elbow stays on its axis even bent is left out). Of the start pose: the body's
    preferred swivels (each goaled limb's swivel starts there and the rest term pulls it
    there, not at the limb's zero-pose side, which flipped a mocap knee; a position
    goal's φ is measured about the wrist centre here). Of the body's solution: the
    swivels its limbs are finished with (:func:`_finish`). ``names``: only these limbs."""
    out: dict[str, float] = {}
    for k, (bl, model) in enumerate(zip(core_body.limbs, core_body.models, strict=True)):
        if names is not None and bl.name not in names:
            continue
        phi = pose_swivel(model, *core_body.limb_pose(k, q0))
        if phi is not None:
            out[bl.name] = phi
    return out


def yields(pin: Any, pins: list[Any]) -> bool:
    """Whether a goal pin has a more important (lower-numbered) goal pin above it."""
    return any(q.priority < pin.priority for q in pins)


def pin_message(st: LimbStatus, pin: Any, pins: list[Any], pos: float, ori: float,
                ok: bool) -> str:
    """A pin's status message (measured on the evaluated pose)."""
    if not st.solved:
        return st.message
    if ok:
        return "ok" if st.within_limits else "reached; outside the joint limits"
    why = " (it yields to higher-priority pins)" if yields(pin, pins) else ""
    return (f"target not reached{why} (position error {pos:.4g} m, orientation error "
            f"{ori:.4g} rad, measured on the evaluated pose)")


def store(obj: Any, st: LimbStatus) -> None:
    """Copy a body status into the body's and its pins' ``status`` properties."""
    body = obj.limber.bodies.get(st.limb)
    if body is None:
        return
    verify.store(body.status, st)
    pins = goal_pins(body)
    k = 0
    for p in body.pins:
        if p not in pins or k >= len(st.effectors):
            p.status.reached = False
            p.status.message = ("skipped: disabled or no target" if p not in pins
                                else st.message)
            continue
        pos, ori, ok = st.effectors[k]
        k += 1
        p.status.position_error, p.status.orientation_error = pos, ori
        p.status.reached, p.status.within_limits = ok, st.within_limits
        p.status.measured = st.measured == "depsgraph"
        p.status.frame = st.frame or 0
        p.status.message = pin_message(st, p, pins, pos, ori, ok)

