import torch

import models


class Evaluate:
    def __init__(self, loader, checkpoint):
        self.loader = loader
        self.checkpoint = checkpoint

    def load_model(self):
        model, _, _ = models.get_model()
        model.load_state_dict(torch.load(self.checkpoint, weights_only=True))
        model.eval()
        return model

    def infer(self):
        model = self.load_model()
        y_pred = []
        with torch.no_grad():
            for inputs, _ in self.loader:
                y_pred.extend((model(inputs).squeeze(1) >= 0.5).float().tolist())
        return y_pred
