import argparse

import torch

import models


class Evaluate:
    def __init__(self, loader, checkpoint):
        self.loader = loader
        self.checkpoint = checkpoint

    def load_model(self):
        model, _, _ = models.get_model()
        model.load_state_dict(torch.load(self.checkpoint, weights_only=True))
        return model

    def infer(self):
        model = self.load_model()
        y_pred, y_true = [], []
        with torch.no_grad():
            for inputs, labels in self.loader:
                output = model(inputs)  # expect: missing-eval-mode
                y_pred.extend((output.squeeze(1) >= 0.5).float().tolist())
                y_true.extend(labels.tolist())
        return y_pred, y_true


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint")
    args = parser.parse_args()
    loader = torch.utils.data.DataLoader(torch.load("test_set.pt"), batch_size=32)  # expect: torch-load-without-weights-only
    pred, true = Evaluate(loader, args.checkpoint).infer()
    print(sum(p == t for p, t in zip(pred, true)) / len(true))
