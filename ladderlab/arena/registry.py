"""The arena's plugin families, by id, as the mechanisms' and attacks' (:mod:`ladderlab.registry`).

- arena policies: built-in ones in ``ladderlab/arena/policies/`` (one per module), third-party ones
  under the entry-point group ``ladderlab.arena_policies``, or ``path/to/file.py:Class``;
- arena attacks: ``ladderlab/arena/attacks/``, group ``ladderlab.arena_attacks``, or a file;
- arena families (pairwise task families): ``pairwise`` (:mod:`ladderlab.arena.family`), group
  ``ladderlab.arena_families``, or a file with a subclass of :class:`ladderlab.arena.family.PairwiseArena`.

The registries register themselves with :data:`ladderlab.registry.FAMILIES` (kinds ``arena policy``,
``arena attack`` and ``arena family``), which page stamps read.
"""

from __future__ import annotations

from ladderlab.arena.attack import ArenaAttack
from ladderlab.arena.family import PairwiseArena
from ladderlab.arena.policy import ArenaPolicy
from ladderlab.registry import Registry

ARENA_POLICIES: Registry[ArenaPolicy] = Registry("arena policy", ArenaPolicy, "ladderlab.arena.policies",
                                                 "ladderlab.arena_policies")
ARENA_ATTACKS: Registry[ArenaAttack] = Registry("arena attack", ArenaAttack, "ladderlab.arena.attacks",
                                                "ladderlab.arena_attacks")
ARENA_FAMILIES: Registry[PairwiseArena] = Registry("arena family", PairwiseArena, "ladderlab.arena.family",
                                                   "ladderlab.arena_families")
