"""Final rankings: the ranking after the close, its certificate (bootstrap rank intervals), the
submission log and the replay of a challenge under another mechanism."""
