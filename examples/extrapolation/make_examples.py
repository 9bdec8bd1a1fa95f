"""Regenerate the example inputs of ``ladderlab stats extrapolate`` (see docs/extrapolation.md).

A population of 200 Gaussian classes in 20 dimensions (means drawn at random, each
estimated from 5 training points); a nearest-class-mean classifier scores every test
point against each class. ``ranks.txt`` holds the correct label's rank among the first
20 classes (one line per class, 25 test points each); ``scores.csv`` the score matrix
of the first 10 classes (15 test points each). The script prints the accuracy on all
200 classes, the number an extrapolation from either file tries to predict.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
rng = np.random.default_rng(2016)
K, dimension, training, testing = 200, 20, 5, 25
means = rng.normal(0, 0.6, (K, dimension))
estimated = means + rng.normal(size=(K, dimension)) / np.sqrt(training)
labels = np.repeat(np.arange(K), testing)
points = means[labels] + rng.normal(size=(labels.size, dimension))
scores = -((points[:, None, :] - estimated[None, :, :]) ** 2).sum(axis=-1)
print(f"accuracy on all {K} classes: {np.mean(scores.argmax(axis=1) == labels):.4f}")

k = 20
rows = labels < k
own = scores[rows, labels[rows]]
ranks = 1 + np.sum(scores[rows][:, :k] > own[:, None], axis=1)
lines = [" ".join(map(str, ranks[labels[rows] == c])) for c in range(k)]
header = (f"# correct-label ranks among k = {k} classes (1 = top), one line per class\n"
          f"# run: ladderlab stats extrapolate examples/extrapolation/ranks.txt --from {k} --to {K}\n")
(HERE / "ranks.txt").write_text(header + "\n".join(lines) + "\n")

k, per_class = 10, 15
names = [f"class{c:02d}" for c in range(k)]
chosen = np.concatenate([np.flatnonzero(labels == c)[:per_class] for c in range(k)])
table = ["label," + ",".join(names)]
for index in chosen:
    table.append(names[labels[index]] + "," + ",".join(f"{s:.3f}" for s in scores[index, :k]))
(HERE / "scores.csv").write_text("\n".join(table) + "\n")
print(f"accuracy on the first {k} classes: "
      f"{np.mean(scores[chosen][:, :k].argmax(axis=1) == labels[chosen]):.4f}")
