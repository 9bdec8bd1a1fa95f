"""Helpers with no knowledge of leaderboards: atomic files, progress bars, locations, tables
users hand in, Markdown, CPU time, memory, determinism, source files. The bottom layer."""
