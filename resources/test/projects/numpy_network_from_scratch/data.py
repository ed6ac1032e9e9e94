import numpy as np


def load_split(path="heart.csv", test_fraction=0.2):
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    x, y = table[:, :-1], table[:, -1:]
    cut = int(len(x) * (1 - test_fraction))
    return x[:cut], y[:cut], x[cut:], y[cut:]
