"""Accuracy-extrapolation experiments (Zheng, Achanta & Benjamini) as a kind of scenario cell."""
