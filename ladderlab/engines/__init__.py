"""Plugin engines: the machinery built-in and third-party plugins are made of (the Ladder
family, bootstrap weights, noise, change points, regression, votes, analysts, label codes, cohorts,
linked accounts)."""
