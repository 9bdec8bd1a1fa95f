"""Built-in leaderboard mechanisms, one module each (installed as ``ladderlab.mechanisms``).

To write a new mechanism, copy the module closest to it, change the class name,
``id``, ``reference`` and the algorithm, and register it (see the README).
"""
