"""What the user touches: :mod:`.panels` (the sidebar), :mod:`.operators` (the
``limber.*`` operators), :mod:`.overlay` (the viewport's swivel circle) and :mod:`.cli`
(``blender -c limber``)."""
