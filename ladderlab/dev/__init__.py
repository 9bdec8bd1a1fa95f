"""The maintainers' tools, under ``ladderlab dev``: benchmarks and the generated pages of this
repository."""
