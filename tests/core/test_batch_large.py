"""Large batches: the batch-last forward kinematics / position-goal evaluation, the
batched SPD solve and threaded solves give the rows of the small-batch code paths.

Concerns: frames (every DOF type, Ball orders, locked components, trees whose levels
gather parents by index), residual / Jacobian / errors of all-position goal lists
(weights, shared and batched targets, target-based Jacobian, row selection), mixed goal
lists on batch-last frames, the Cholesky solve and its LU fallback, threads.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import core.chain.kinematics as kinematics
from core import (
    Ball,
    Fixed,
    Hinge,
    Joint,
    Method,
    PoseGoal,
    PositionGoal,
    Skeleton,
    SolveSettings,
    solve,
)
from core.chain.steps.dls import spd_solve
from tests.core.ik_test_helpers import reachable_goals, single
from tests.fixtures import arm_chain, buss_double_y, buss_y, translation

B = 2 * kinematics.BATCH_LAST_ROWS + 3  # batch-last, and not a multiple of anything


def _tree() -> Skeleton:
    """Every DOF type and Ball order, locked components, a Fixed branch point whose
    children are not contiguous in level order (parents gathered by index)."""
    rng = np.random.default_rng(0)

    def off() -> np.ndarray:
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        return translation(rng.uniform(-0.3, 0.3, 3), q * np.sign(np.linalg.det(q)))

    joints = [
        Joint("root", -1, off(), Ball("ZXY")),
        Joint("a", 0, off(), Hinge((0.3, -0.2, 0.9))),
        Joint("b", 0, off(), Ball("YZX", locked=(False, True, False))),
        Joint("fork", 1, off(), Fixed()),
        Joint("c", 2, off(), Ball("XZY")),
        Joint("d", 3, off(), Hinge((0.0, 1.0, 0.0))),
        Joint("e", 4, off(), Ball("ZYX", locked=(True, False, False))),
        Joint("f", 3, off(), Ball("YXZ")),
        Joint("g", 5, off(), Fixed()),
        Joint("h", 6, off(), Ball("XYZ")),
        Joint("i", 7, off(), Fixed()),
    ]
    return Skeleton(joints)


SKELETONS = {
    "tree": _tree,
    "double-Y": lambda: buss_double_y().skeleton,
    "Y": lambda: buss_y().skeleton,
    "arm": lambda: arm_chain().skeleton,
}


@pytest.fixture
def batch_first(monkeypatch):
    """Call the small-batch (batch-first) code paths at any batch size."""

    def use() -> None:
        monkeypatch.setattr(kinematics, "BATCH_LAST_ROWS", 10**9)

    return use


def _fresh(sk: Skeleton) -> Skeleton:
    """The same skeleton without cached goal plans."""
    return Skeleton(sk.joints)


@pytest.mark.parametrize("name", list(SKELETONS))
def test_batch_last_frames_equal_batch_first(name, batch_first):
    sk = SKELETONS[name]()
    q = np.random.default_rng(1).uniform(-3, 3, (B, sk.n_dofs))
    last = sk.forward(q)
    batch_first()
    first = _fresh(sk).forward(q)
    np.testing.assert_allclose(last, first, rtol=0, atol=1e-14)


def _position_goals(sk: Skeleton, rng, *, weights: bool, shared: bool) -> list[PositionGoal]:
    leaves = [i for i in range(len(sk.joints)) if i not in {j.parent for j in sk.joints}]
    goals = []
    for k, j in enumerate(leaves):
        target = rng.uniform(-1, 1, 3) if shared and k == 0 else rng.uniform(-1, 1, (B, 3))
        goals.append(PositionGoal(target, joint=j, weight=0.25 + k if weights else 1.0))
    return goals


@pytest.mark.parametrize("name", list(SKELETONS))
@pytest.mark.parametrize(
    ("weights", "shared", "target_based"),
    [(False, False, False), (True, False, False), (False, True, False), (True, True, True)],
)
def test_batch_last_position_evaluation_equals_batch_first(
    name, weights, shared, target_based, batch_first
):
    sk = SKELETONS[name]()
    rng = np.random.default_rng(2)
    goals = _position_goals(sk, rng, weights=weights, shared=shared)
    q = rng.uniform(-2, 2, (B, sk.n_dofs))
    memo: dict = {}
    last = sk.evaluate(q, goals, target_based=target_based, memo=memo)
    again = sk.evaluate(q + 0.1, goals, target_based=target_based, memo=memo)  # reused memo
    batch_first()
    ref = _fresh(sk)
    for ev, qq in ((last, q), (again, q + 0.1)):
        r = ref.evaluate(qq, goals, target_based=target_based)
        np.testing.assert_allclose(ev.e, r.e, rtol=0, atol=1e-13)
        np.testing.assert_allclose(ev.J, r.J, rtol=0, atol=1e-13)
        np.testing.assert_allclose(ev.goal_error, r.goal_error, rtol=0, atol=1e-13)


def test_batch_last_rows_select_batched_targets(batch_first):
    sk = buss_double_y().skeleton
    rng = np.random.default_rng(3)
    goals = _position_goals(sk, rng, weights=False, shared=False)
    rows = np.arange(B)[::-1][: B - 5].copy()
    q = rng.uniform(-2, 2, (rows.size, sk.n_dofs))
    ev = sk.evaluate(q, goals, rows=rows, memo={})
    batch_first()
    r = _fresh(sk).evaluate(q, goals, rows=rows)
    np.testing.assert_allclose(ev.e, r.e, rtol=0, atol=1e-13)
    np.testing.assert_allclose(ev.J, r.J, rtol=0, atol=1e-13)


def test_mixed_goals_on_batch_last_frames_equal_batch_first(batch_first):
    """Pose goals (rotation rows) take the general evaluation on batch-last frames."""
    fx = arm_chain()
    sk = fx.skeleton
    goals, _, qs = reachable_goals(fx, batch=B)
    goals.append(PositionGoal(qs[:, :3], joint="wrist", weight=0.3))
    q = np.random.default_rng(4).uniform(-1, 1, (B, sk.n_dofs))
    ev = sk.evaluate(q, goals)
    batch_first()
    r = _fresh(sk).evaluate(q, goals)
    np.testing.assert_allclose(ev.e, r.e, rtol=0, atol=1e-13)
    np.testing.assert_allclose(ev.J, r.J, rtol=0, atol=1e-13)


def test_spd_solve_cholesky_matches_lu_and_falls_back():
    rng = np.random.default_rng(5)
    j = rng.normal(size=(B, 12, 25)) * (rng.random((1, 12, 25)) < 0.4)
    a = j @ j.swapaxes(-1, -2)
    a.reshape(B, 144)[:, ::13] += 1e-4
    r = rng.normal(size=(B, 12))
    x = spd_solve(a, r)
    np.testing.assert_allclose(a @ x[..., None], r[..., None], rtol=0, atol=1e-9)
    np.testing.assert_allclose(x, np.linalg.solve(a, r[..., None])[..., 0], rtol=1e-9)
    # one indefinite matrix: Cholesky fails, LU solves the whole batch
    a[7] = np.diag(np.r_[-1.0, np.ones(11)])
    x = spd_solve(a, r)
    np.testing.assert_allclose(a @ x[..., None], r[..., None], rtol=0, atol=1e-9)


@pytest.mark.parametrize("method", list(Method), ids=lambda m: m.name)
def test_threaded_solve_equals_one_thread(method):
    """Every method, threads 2 and 3 against 1 (LBFGSB's scipy minimiser included).
    EXTENDED_JACOBIAN runs with w = 0.1 to convergence: with w = 1 it is still in its
    non-monotone transient after 30 iterations, where last-bit differences (3 threads put
    44-row chunks on the batch-first path) grow to 0.3 rad in a few rows — the same
    amplification as between a batched and a one-by-one solve, not a threading effect."""
    fx = buss_double_y()
    # LBFGSB minimises row by row in Python: 12 rows (chunks of 6 and 4) are enough
    goals, q0, _ = reachable_goals(fx, batch=12 if method is Method.LBFGSB else B)
    its: dict[str, object] = {
        Method.LBFGSB: {"max_iterations": 2, "lbfgsb_iterations": 10},
        Method.EXTENDED_JACOBIAN: {"max_iterations": 100, "extended_weight": 0.1},
    }.get(method, {})
    kw = {"max_iterations": 30, **its}
    base = SolveSettings(**kw)
    one = solve(fx.skeleton, goals, q0, method, SolveSettings(**kw, threads=1))
    for threads in (2, 3):
        s = SolveSettings(**kw, threads=threads)
        r = solve(fx.skeleton, goals, q0, method, s)
        if method is Method.EXTENDED_JACOBIAN:  # same outcome; q drifts in the null space
            np.testing.assert_array_equal(r.reached, one.reached)
            assert r.reached.all() and r.error.max() <= 1e-6
            continue
        # chunks of other sizes round differently (BLAS blocking, the batch-first path
        # below BATCH_LAST_ROWS rows): equal to rounding, like batched vs one-by-one
        # CCD: Anderson's small least-squares solves amplify the rounding in the
        # redundant directions a little more (1.7e-8 measured; issue 16); JT's conjugate
        # directions carry it from step to step (goal errors 1.1e-10 apart measured)
        atol = {Method.CCD: 1e-6, Method.JACOBIAN_TRANSPOSE: 1e-7}.get(method, 1e-8)
        np.testing.assert_allclose(r.q, one.q, rtol=0, atol=atol)  # redundant: drift
        np.testing.assert_array_equal(r.iterations, one.iterations)
        np.testing.assert_allclose(r.per_goal_error, one.per_goal_error, rtol=0, atol=atol / 100)
        assert list(r.reason) == list(one.reason)
        again = solve(fx.skeleton, goals, q0, method, s)  # deterministic per setting
        np.testing.assert_array_equal(again.q, r.q)
    auto = solve(fx.skeleton, goals, q0, method, base)
    np.testing.assert_array_equal(auto.reached, one.reached)


def test_large_batch_agrees_with_one_by_one():
    """Rows of a batch-last, threaded DLS solve = the same problems solved alone (which
    take the batch-first path)."""
    fx = buss_double_y()
    goals, q0, _ = reachable_goals(fx, batch=B, scale=0.8)
    s = SolveSettings(max_iterations=60, threads=2)
    r = solve(fx.skeleton, goals, q0, Method.DLS, s)
    assert r.reached.mean() > 0.9
    for b in (0, 1, B // 2, B - 1):
        rb = solve(fx.skeleton, [single(g, b) for g in goals], q0[b], Method.DLS, s)
        np.testing.assert_allclose(rb.q, r.q[b], rtol=0, atol=1e-9)
        assert rb.iterations == r.iterations[b] and rb.reason is r.reason[b]


def test_threads_setting_is_validated():
    with pytest.raises(Exception, match="threads"):
        SolveSettings(threads=0)
    with pytest.raises(Exception, match="threads"):
        SolveSettings(threads=1.5)  # type: ignore[arg-type]


def test_pose_goal_batch_uses_batch_last_frames():
    """Sanity: the frames an Evaluation hands to the solvers are (B, N, ≥3, 5) views
    whose joint rotations and origins are those of forward()."""
    fx = arm_chain()
    sk = fx.skeleton
    q = np.random.default_rng(6).uniform(-1, 1, (B, sk.n_dofs))
    goal = PoseGoal(np.zeros((B, 3)), np.tile(np.eye(3), (B, 1, 1)), joint="hand")
    ev = sk.evaluate(q, [goal])
    rot, org, _, _ = sk.kinematics_of(ev.frames)
    f = sk.forward(q)
    np.testing.assert_allclose(rot, f[..., :3, :3], rtol=0, atol=1e-15)
    np.testing.assert_allclose(org, f[..., :3, 3], rtol=0, atol=1e-15)


def test_automatic_threads_follow_the_work(monkeypatch):
    from core import STEP_CLASSES
    from core.chain import threads as ik

    monkeypatch.setattr(ik.os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3}, raising=False)
    w = ik.WORK_PER_THREAD
    assert ik.worker_count(None, 1, 29) == 1  # single problems never start a thread
    assert ik.worker_count(None, w // 29, 29) == 1  # too little work for a second thread
    assert ik.worker_count(None, 2 * w // 29 + 1, 29) == 2
    assert ik.worker_count(None, 100 * w, 29) == 4  # at most the CPUs
    assert ik.worker_count(3, 2, 29) == 2  # never more threads than rows
    assert ik.worker_count(1, 10**6, 29) == 1
    # per-method work: gated DLS threads sooner, CCD later (measured crossovers)
    steps = STEP_CLASSES
    assert steps[Method.DLS].work_per_thread < w < steps[Method.CCD].work_per_thread
    assert steps[Method.JACOBIAN_TRANSPOSE].work_per_thread == w
    dls = steps[Method.DLS].work_per_thread
    assert ik.worker_count(None, 2 * dls // 29 + 1, 29, dls) == 2
    assert ik.worker_count(None, 2 * dls // 29 + 1, 29) == 1


def test_lbfgsb_is_not_threaded_automatically(monkeypatch):
    """Python-driven per-row steps opt out of automatic threads; explicit ones apply."""
    from core.chain import loop, threads

    seen = []
    real = threads.worker_count

    def spy(n_threads, rows, nodes, work=threads.WORK_PER_THREAD):
        seen.append(n_threads)
        return real(n_threads, rows, nodes, work)

    monkeypatch.setattr(loop, "worker_count", spy)
    fx = buss_y()
    goals, q0, _ = reachable_goals(fx, batch=4)
    quick = {"max_iterations": 1, "lbfgsb_iterations": 5}
    solve(fx.skeleton, goals, q0, Method.LBFGSB, SolveSettings(**quick))
    solve(fx.skeleton, goals, q0, Method.LBFGSB, SolveSettings(**quick, threads=2))
    solve(fx.skeleton, goals, q0, Method.DLS, SolveSettings(max_iterations=1))
    assert seen == [1, 2, None]


def test_position_goal_batch_frames_match_forward():
    """The batch-last position path hands the solvers (CCD) frames made from its axis
    frames on access: joint rotations, origins and DOF axes as forward() and the Jacobian
    columns say."""
    sk = _tree()
    rng = np.random.default_rng(7)
    goals = _position_goals(sk, rng, weights=False, shared=False)
    q = rng.uniform(-2, 2, (B, sk.n_dofs))
    ev = sk.evaluate(q, goals, memo={})
    rot, org, axes, origins = sk.kinematics_of(ev.frames)
    f = sk.forward(q)
    np.testing.assert_allclose(rot, f[..., :3, :3], rtol=0, atol=1e-14)
    np.testing.assert_allclose(org, f[..., :3, 3], rtol=0, atol=1e-14)
    # a position goal's Jacobian column for DOF d is w_d × (x − p_d)
    x = f[:, sk.joint_index(goals[0].joint), :3, 3]
    expected = np.cross(axes, x[:, None, :] - origins)
    np.testing.assert_allclose(
        ev.J[:, :3, :], np.swapaxes(expected, 1, 2) * (ev.J[:, :3, :] != 0), atol=1e-13
    )


@given(st.tuples(*(st.floats(-1, 1) for _ in range(3))).filter(lambda v: np.linalg.norm(v) > 1e-3))
def test_axis_basis_is_a_rotation_taking_z_to_the_axis(v):
    a = np.asarray(v) / np.linalg.norm(v)
    k = kinematics.axis_basis(a)
    np.testing.assert_allclose(k.T @ k, np.eye(3), atol=1e-15)
    assert np.linalg.det(k) == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(k[:, 2], a, atol=1e-16)


@pytest.mark.parametrize("i", range(3))
def test_axis_basis_of_unit_axes_is_a_permutation(i):
    k = kinematics.axis_basis(np.eye(3)[i])
    assert set(np.unique(k)) == {0.0, 1.0}
    np.testing.assert_array_equal(k[:, 2], np.eye(3)[i])
    assert np.linalg.det(k) == 1.0


def test_gate_lets_one_chunk_through_at_a_time_and_opens_for_heavy_calls():
    """Gate: a chunk holds it for its loop, opens it (once, even nested) around heavy
    calls, and gets it back after an exception inside them."""
    import threading

    from core.chain.threads import Gate, opened

    gate = Gate()
    inside = []
    with gate.hold():
        assert gate._lock.locked()
        with gate.open():
            assert not gate._lock.locked()
            with opened(gate):  # nested: still open, closed once on the way out
                assert not gate._lock.locked()
            assert not gate._lock.locked()
            other = threading.Thread(target=lambda: inside.append(gate._lock.acquire(timeout=5)))
            other.start()
            other.join()
            gate._lock.release()
        assert gate._lock.locked()
        with pytest.raises(ZeroDivisionError):
            with gate.open():
                _ = 1 / 0
        assert gate._lock.locked()
    assert not gate._lock.locked()
    assert inside == [True]  # another chunk got through while the gate was open


def test_gated_methods_use_the_gate_only_when_threaded(monkeypatch):
    """DLS and DLS_CLAMPED chunks on two threads pass the gate (their rows are checked
    against one thread in test_threaded_solve_equals_one_thread); one thread never makes
    one."""
    from core import STEP_CLASSES

    fx = buss_double_y()
    goals, q0, _ = reachable_goals(fx, B)
    for method in (Method.DLS, Method.DLS_CLAMPED):
        cls = STEP_CLASSES[method]
        assert cls.gated
        made = []
        real = cls.run

        def spy(self, *a, _real=real, _made=made, **k):
            out = _real(self, *a, **k)
            _made.append(self.gate is not None)
            return out

        monkeypatch.setattr(cls, "run", spy)
        one = solve(fx.skeleton, goals, q0, method, SolveSettings(threads=1, max_iterations=30))
        two = solve(fx.skeleton, goals, q0, method, SolveSettings(threads=2, max_iterations=30))
        assert made == [False, True]
        np.testing.assert_allclose(two.q, one.q, rtol=0, atol=1e-8)
