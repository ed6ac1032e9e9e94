import argparse

from torch.utils.data import DataLoader

from segmentation.solver import Solver


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--num_epochs", type=int, default=100)
    config = parser.parse_args()
    from segmentation.data import SegmentationDataset

    train_loader = DataLoader(SegmentationDataset("train"), batch_size=8, shuffle=True)
    valid_loader = DataLoader(SegmentationDataset("valid"), batch_size=8)
    Solver(config, train_loader, valid_loader).train()


if __name__ == "__main__":
    main()
