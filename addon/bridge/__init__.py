"""The one road between Blender and the core, in the order a solve takes it.

* :mod:`.read` — Blender → arrays: the evaluated pose of a limb's bones, targets, poles,
  swivels (N frames; a live solve is N = 1).
* :mod:`.requests` — settings + reads → typed core requests (goal in the frame the upper
  bone's rotation acts in, the limb's links as Blender evaluates them, solve options).
* the core solves (:func:`core.solve_limb`, :func:`core.solve`).
* :mod:`.write` — solutions → rotation values per rotation mode (pose or keys).
* :mod:`.verify` — the pose Blender evaluates against the goal → the status.

Live solving, ``limber.solve``, the frame-change handler, ``limber.bake``, the CLI,
snapping, the overlay and the demo all go through these modules (via
:mod:`addon.solve` and :mod:`addon.bake`). No rotation or transform arithmetic lives
here: it is in :mod:`core` (``core.geometry.rigid``, ``core.geometry.rotations``).
"""
