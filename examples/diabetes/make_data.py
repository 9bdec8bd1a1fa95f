"""Write this example's data files from scikit-learn's copy of the diabetes data (Efron et al. 2004).

Run from this folder: ``python make_data.py``. The 442 patients are shuffled with a fixed seed;
142 become the training rows (features and label), the other 300 the holdout, half of them
public and half final (the ``split`` column of labels.csv). The ten features are standardised with
the training rows' mean and standard deviation and rounded to 4 decimals; the label is the
disease progression one year after baseline, an integer from 25 to 346.
"""

import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes

N_TRAIN = 142

data = load_diabetes(as_frame=True, scaled=False)
features = data.data
order = np.random.default_rng(2026).permutation(len(features))
features, labels = features.iloc[order].reset_index(drop=True), data.target.iloc[order].reset_index(drop=True)
features = ((features - features.iloc[:N_TRAIN].mean()) / features.iloc[:N_TRAIN].std()).round(4)
labels = labels.round().astype(int)
train = features.iloc[:N_TRAIN].assign(label=labels.iloc[:N_TRAIN])
holdout = features.iloc[N_TRAIN:].reset_index(drop=True)
ids = [f"d{number:03d}" for number in range(1, len(holdout) + 1)]
split = np.where(np.arange(len(holdout)) % 2 == 0, "public", "final")
pd.DataFrame({"id": ids, "label": labels.iloc[N_TRAIN:].to_numpy(), "split": split}).to_csv("labels.csv", index=False)
holdout.insert(0, "id", ids)
holdout.to_csv("holdout.csv", index=False)
train.to_csv("train.csv", index=False)
