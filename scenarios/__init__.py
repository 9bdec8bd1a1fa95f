"""Built-in scenario files (installed as ``ladderlab.scenarios``)."""
