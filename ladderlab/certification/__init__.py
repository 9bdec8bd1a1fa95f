"""Certification: the attack battery, sequential verdicts, the safe budget, tuning, and the
organiser's own challenge file."""
