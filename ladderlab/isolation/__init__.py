"""Attack code run apart from the organiser: the protocol of an isolated duel, the bubblewrap
sandbox, duels played together, and the stand-ins for plugins that are not trusted."""
