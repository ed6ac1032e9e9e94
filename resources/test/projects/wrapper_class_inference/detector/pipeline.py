import torch
from torchvision import transforms

from detector.backbone import FeatureNet


class Detector:
    """The trained network and its preprocessing, for inference (not an nn.Module)."""

    def __init__(self, weights_dir, device="cuda"):
        self.device = device
        self.net = FeatureNet(num_classes=10).to(device)
        state = torch.load(f"{weights_dir}/net.pt", map_location=device, weights_only=True)
        self.net.load_state_dict(state)
        self.normalize = transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))

    def scores(self, images):
        self.net.eval()
        logits = self.net(self.normalize(images.to(self.device)))
        return logits.softmax(dim=1).cpu()

    def logits(self, images):
        self.net.eval()
        return self.net(self.normalize(images.to(self.device))).cpu()

    def describe(self, images):
        self.net.eval()
        logits = self.net(self.normalize(images.to(self.device)))  # expect: eval-without-no-grad
        return [int(i) for i in logits.argmax(dim=1)]
