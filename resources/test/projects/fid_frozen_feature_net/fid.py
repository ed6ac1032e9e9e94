import argparse

import numpy as np

from metrics import FeatureNet, ProbeNet
from metrics.probe import probe_activations
from metrics.score import activation_statistics, frechet_distance


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("real")
    parser.add_argument("fake")
    parser.add_argument("--dims", type=int, default=64)
    args = parser.parse_args()
    real = np.load(args.real)
    fake = np.load(args.fake)
    model = FeatureNet(args.dims)
    m1, s1 = activation_statistics(real, model, dims=args.dims)
    m2, s2 = activation_statistics(fake, model, dims=args.dims)
    print("FID:", frechet_distance(m1, s1, m2, s2))
    probe = ProbeNet(args.dims)
    print(probe_activations(real, probe).shape)


if __name__ == "__main__":
    main()
