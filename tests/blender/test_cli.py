"""``blender -c limber bake|report``, called through the same entry point from bpy."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import bpy
import numpy as np

from tests.blender.conftest import compat
from tests.blender.limber_rigs import RIGIFY_LIMBS, add_empty, add_limb, metarig, world_pose


def _saved_rig(tmp_path: Path) -> Path:
    obj = metarig()
    for name, bones in RIGIFY_LIMBS.items():
        t = add_empty(f"T.{name}")
        rest = world_pose(obj, bones[2])
        shoulder = world_pose(obj, bones[0])[:3, 3]
        for f in (1, 20):
            t.location = rest[:3, 3] + (0.2 + 0.005 * f) * (shoulder - rest[:3, 3])
            t.keyframe_insert("location", frame=f)
        add_limb(obj, name, bones, target=t, goal_type="POSITION")
    path = tmp_path / "rig.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


def test_cli_is_registered(limber: Any) -> None:
    assert limber.sub("addon.ui.cli")._handle is not None


def test_cli_bake_writes_keys_to_the_output(limber: Any, tmp_path: Path) -> None:
    cli = limber.sub("addon.ui.cli")
    rig = _saved_rig(tmp_path)
    out = tmp_path / "out.blend"
    argv = ["bake", "--input", str(rig), "--output", str(out), "--start", "1", "--end", "20"]
    assert cli.main(argv) == 0
    assert out.is_file()
    bpy.ops.wm.open_mainfile(filepath=str(out))
    obj = bpy.data.objects["metarig"]
    fcurves = compat().assigned_fcurves(obj.animation_data)
    keyed = {fc.data_path.split('"')[1] for fc in fcurves}
    assert keyed == {b for bones in RIGIFY_LIMBS.values() for b in bones[:2]}
    assert all(len(fc.keyframe_points) == 20 for fc in fcurves)


def test_cli_report_writes_json(limber: Any, tmp_path: Path) -> None:
    cli = limber.sub("addon.ui.cli")
    rig = _saved_rig(tmp_path)
    report = tmp_path / "report.json"
    argv = ["report", "--input", str(rig), "--start", "1", "--end", "5", "--json", str(report)]
    assert cli.main(argv) == 0
    data = json.loads(report.read_text())
    assert [fr["frame"] for fr in data["frames"]] == [1, 2, 3, 4, 5]
    rows = data["frames"][0]["limbs"]
    assert sorted(r["limb"] for r in rows) == sorted(RIGIFY_LIMBS)
    for r in rows:
        assert r["solved"] and r["reachable"] and r["within_limits"]
        assert r["position_error"] < 1e-6
        assert math.isclose(r["feasible_swivel_measure"], 2 * math.pi)
        assert r["solve_us"] > 0
    assert np.isfinite([r["total_us"] for r in rows]).all()


def test_cli_bad_arguments_and_missing_bones(limber: Any, tmp_path: Path, capsys: Any) -> None:
    cli = limber.sub("addon.ui.cli")
    assert cli.main(["bake", "--input", "x.blend"]) == 2
    assert cli.main(["frobnicate"]) == 2
    assert cli.main(["report", "--input", str(tmp_path / "missing.blend"), "--start", "1",
                     "--end", "2", "--json", str(tmp_path / "r.json")]) == 1
    rig = _saved_rig(tmp_path)
    bpy.ops.wm.open_mainfile(filepath=str(rig))
    bpy.data.objects["metarig"].limber.limbs["arm.L"].end_bone = "no_such_bone"
    bpy.ops.wm.save_mainfile()
    out = tmp_path / "o.blend"
    status = cli.main(["bake", "--input", str(rig), "--output", str(out), "--start", "1",
                       "--end", "3"])
    assert status == 1 and not out.exists()
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("limber: error")]
    assert len(lines) == 4
    assert "no_such_bone" in lines[-1]
