"""What the user touches: :mod:`.panels` (the sidebar), :mod:`.operators` (the
``limber.*`` operators) and :mod:`.poll` (when they can run), :mod:`.overlay` (the
viewport's swivel circle), :mod:`.preferences` (the add-on preferences), :mod:`.keymap`
(Pose-mode keys), :mod:`.translations` (the ``bpy.app.translations`` hook) and :mod:`.cli`
(``blender -c limber``)."""
