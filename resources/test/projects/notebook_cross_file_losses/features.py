import numpy as np
import pandas as pd

NUMERIC = ["tenure", "monthly_charges", "total_charges"]
CATEGORICAL = ["contract", "payment_method", "internet_service"]


def load_features(path):
    df = pd.read_csv(path)
    df["total_charges"] = pd.to_numeric(df["total_charges"], errors="coerce").fillna(0.0)
    x = pd.get_dummies(df[NUMERIC + CATEGORICAL], columns=CATEGORICAL, dtype=np.float32)
    x[NUMERIC] = (x[NUMERIC] - x[NUMERIC].mean()) / x[NUMERIC].std()
    y = (df["churn"] == "Yes").astype(np.float32).to_numpy()
    return x.to_numpy(dtype=np.float32), y, list(x.columns)
