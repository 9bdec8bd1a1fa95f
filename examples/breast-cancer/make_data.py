"""Write this example's data files from scikit-learn's copy of the Wisconsin breast-cancer data.

Run from this folder: ``python make_data.py``. The 569 patients are shuffled with a fixed
seed; 169 become the training rows (features and label), the other 400 the holdout, half of
them public and half final (the ``split`` column of labels.csv). The features are
standardised with the training rows' mean and standard deviation and rounded to 4 decimals
(on the raw scale, areas near 1000 beside smoothness near 0.1, the participants' logistic
regressions do not converge).
"""

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer

N_TRAIN = 169

data = load_breast_cancer(as_frame=True)
features = data.data.rename(columns=lambda name: name.replace(" ", "_"))
order = np.random.default_rng(2026).permutation(len(features))
features, labels = features.iloc[order].reset_index(drop=True), data.target.iloc[order].reset_index(drop=True)
features = ((features - features.iloc[:N_TRAIN].mean()) / features.iloc[:N_TRAIN].std()).round(4)
train = features.iloc[:N_TRAIN].assign(label=labels.iloc[:N_TRAIN])
holdout = features.iloc[N_TRAIN:].reset_index(drop=True)
ids = [f"p{number:03d}" for number in range(1, len(holdout) + 1)]
split = np.where(np.arange(len(holdout)) % 2 == 0, "public", "final")
pd.DataFrame({"id": ids, "label": labels.iloc[N_TRAIN:].to_numpy(), "split": split}).to_csv("labels.csv", index=False)
holdout.insert(0, "id", ids)
holdout.to_csv("holdout.csv", index=False)
train.to_csv("train.csv", index=False)
