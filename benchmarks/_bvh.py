"""A small numpy reader for BVH motion capture (Biovision hierarchy), for the benchmarks.

Only what the motion-capture suite needs: the joint tree (names, parents, offsets,
channels, end sites), the motion block, and batched forward kinematics over frames.

BVH conventions used here (the de-facto standard, as in Blender's ``io_anim_bvh``):

* a joint's local transform is ``T(offset + position channels) · R`` where ``R`` is the
  product of its rotation channels *in the order listed*: ``Zrotation Xrotation
  Yrotation`` gives ``R = Rz · Rx · Ry`` (angles in degrees in the file, radians here);
* a joint's global transform is ``parent_global · local``; matrices act on column vectors;
* units are the file's (the bundled CMU clips are in metres).

Raises :class:`BvhError` (a ``ValueError``) naming the line or token that is malformed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

_AXES = {"X": 0, "Y": 1, "Z": 2}


class BvhError(ValueError):
    """A malformed BVH file."""


@dataclass(frozen=True, eq=False)
class Bvh:
    """A parsed BVH clip.

    Attributes:
        names: joint names, parents before children.
        parents: parent index per joint (-1 for the root).
        offsets: (J, 3) rest offsets in the parent's frame.
        channels: per joint, its channel names (e.g. ``("Zrotation", "Xrotation", …)``).
        end_sites: joint index → (3,) offset of its End Site.
        frame_time: seconds per frame.
        motion: (F, C) channel values as in the file (degrees for rotations).
    """

    names: tuple[str, ...]
    parents: tuple[int, ...]
    offsets: FloatArray
    channels: tuple[tuple[str, ...], ...]
    end_sites: dict[int, FloatArray]
    frame_time: float
    motion: FloatArray

    @property
    def n_frames(self) -> int:
        return int(self.motion.shape[0])

    def index(self, name: str) -> int:
        if name not in self.names:
            raise BvhError(f"no joint named {name!r}; joints are {list(self.names)}")
        return self.names.index(name)

    def _columns(self, j: int) -> range:
        start = sum(len(c) for c in self.channels[:j])
        return range(start, start + len(self.channels[j]))

    def local_rotation(self, joint: int | str) -> FloatArray:
        """(F, 3, 3) rotation of a joint's channels, per frame."""
        j = joint if isinstance(joint, int) else self.index(joint)
        out = np.tile(np.eye(3), (self.n_frames, 1, 1))
        for col, ch in zip(self._columns(j), self.channels[j], strict=True):
            if ch.endswith("rotation"):
                out = out @ axis_rotation(ch[0], np.radians(self.motion[:, col]))
        return out

    def local(self, joint: int | str) -> FloatArray:
        """(F, 4, 4) local transforms T(offset + position channels) · R."""
        j = joint if isinstance(joint, int) else self.index(joint)
        out = np.tile(np.eye(4), (self.n_frames, 1, 1))
        out[:, :3, :3] = self.local_rotation(j)
        t = np.tile(self.offsets[j], (self.n_frames, 1))
        for col, ch in zip(self._columns(j), self.channels[j], strict=True):
            if ch.endswith("position"):
                t[:, _AXES[ch[0]]] += self.motion[:, col]
        out[:, :3, 3] = t
        return out

    def global_transforms(self) -> FloatArray:
        """(F, J, 4, 4) global transforms of every joint on every frame."""
        out = np.empty((self.n_frames, len(self.names), 4, 4))
        for j, p in enumerate(self.parents):
            loc = self.local(j)
            out[:, j] = loc if p < 0 else out[:, p] @ loc
        return out


def axis_rotation(axis: str, angle: FloatArray) -> FloatArray:
    """(N, 3, 3) rotations by ``angle`` (rad, (N,)) about 'X', 'Y' or 'Z'."""
    if axis not in _AXES:
        raise BvhError(f"unknown rotation axis {axis!r}; valid: X, Y, Z")
    c, s = np.cos(angle), np.sin(angle)
    i = _AXES[axis]
    j, k = (i + 1) % 3, (i + 2) % 3
    out = np.zeros(np.shape(angle) + (3, 3))
    out[..., i, i] = 1.0
    out[..., j, j] = c
    out[..., k, k] = c
    out[..., j, k] = -s
    out[..., k, j] = s
    return out


def parse(text: str) -> Bvh:
    """Parse BVH text (see the module docstring)."""
    tokens = text.split()
    pos = 0

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise BvhError("unexpected end of file")
        pos += 1
        return tokens[pos - 1]

    def expect(word: str) -> None:
        got = take()
        if got != word:
            raise BvhError(f"expected {word!r}, got {got!r} (token {pos})")

    def floats(n: int) -> list[float]:
        try:
            return [float(take()) for _ in range(n)]
        except ValueError as exc:
            raise BvhError(f"expected {n} numbers near token {pos}: {exc}") from exc

    names: list[str] = []
    parents: list[int] = []
    offsets: list[list[float]] = []
    channels: list[tuple[str, ...]] = []
    ends: dict[int, FloatArray] = {}
    expect("HIERARCHY")
    stack: list[int] = []
    word = take()
    if word != "ROOT":
        raise BvhError(f"expected ROOT, got {word!r}")
    while True:
        if word in ("ROOT", "JOINT"):
            names.append(take())
            parents.append(stack[-1] if stack else -1)
            expect("{")
            expect("OFFSET")
            offsets.append(floats(3))
            expect("CHANNELS")
            try:
                n = int(take())
            except ValueError as exc:
                raise BvhError(f"bad channel count near token {pos}") from exc
            channels.append(tuple(take() for _ in range(n)))
            stack.append(len(names) - 1)
        elif word == "End":
            expect("Site")
            expect("{")
            expect("OFFSET")
            ends[stack[-1]] = np.array(floats(3))
            expect("}")
        elif word == "}":
            stack.pop()
            if not stack:
                break
        else:
            raise BvhError(f"unexpected token {word!r} in the hierarchy (token {pos})")
        word = take()
    expect("MOTION")
    expect("Frames:")
    n_frames = int(take())
    expect("Frame")
    expect("Time:")
    frame_time = float(take())
    n_ch = sum(len(c) for c in channels)
    values = np.array(tokens[pos:], dtype=np.float64)
    if values.size != n_frames * n_ch:
        raise BvhError(
            f"motion has {values.size} values, expected {n_frames} frames × {n_ch} channels"
        )
    for c in channels:
        for ch in c:
            if ch[1:] not in ("position", "rotation") or ch[0] not in _AXES:
                raise BvhError(f"unknown channel {ch!r}; valid: [XYZ]position, [XYZ]rotation")
    if not math.isfinite(frame_time) or frame_time <= 0:
        raise BvhError(f"Frame Time must be > 0, got {frame_time}")
    return Bvh(
        names=tuple(names),
        parents=tuple(parents),
        offsets=np.array(offsets, dtype=np.float64),
        channels=tuple(channels),
        end_sites=ends,
        frame_time=frame_time,
        motion=values.reshape(n_frames, n_ch),
    )


def load(path: Path | str) -> Bvh:
    """Parse a BVH file."""
    return parse(Path(path).read_text(encoding="utf-8"))
