"""Built-in attacks, one module each (installed as ``ladderlab.attacks``).

An attack subclasses :class:`ladderlab.attack.Attack`, takes its parameters in
``__init__`` and plays in ``run(board, data, rng)``; copy the closest module to
write a new one.
"""
