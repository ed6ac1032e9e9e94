import torch


class ClickController:
    def __init__(self, net, device, threshold=0.5):
        self.net = net
        self.device = device
        self.threshold = threshold
        self.clicks = []

    def add_click(self, x, y, positive):
        self.clicks.append((x, y, positive))

    def predict(self, image):
        with torch.no_grad():
            logits = self.net(image.to(self.device))  # ok: the app puts the net in eval mode before building the controller
        return logits.softmax(dim=1)[:, 1] > self.threshold


class BatchPredictor:
    def __init__(self, net, device):
        self.net = net
        self.device = device

    def run(self, images):
        with torch.no_grad():
            return self.net(images.to(self.device)).argmax(dim=1)  # expect: missing-eval-mode
