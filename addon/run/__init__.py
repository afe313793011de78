"""Running the pipeline: :mod:`.solve` (one frame: ``limber.solve``, live solving, the
CLI report), :mod:`.bake` (a frame range to keys), :mod:`.live` (``limber.live``) and
:mod:`.handlers` (the frame-change handler for live playback)."""
