"""One engine: :mod:`.engine` (its replication), :mod:`.kernel`, :mod:`.records`, :mod:`.mirror`."""
