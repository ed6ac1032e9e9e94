import torch

from detector import Detector


class StreamInference:
    def __init__(self, files):
        self.files = files
        self.model = None  # loaded on demand

    def configure(self, weights):
        self.model = Detector(weights)

    def image_inference(self):
        for path in self.files:
            image = torch.load(path, weights_only=True)
            results = self.model(image, conf=0.4)  # ok: Detector's own __call__ predicts under inference_mode
            print(path, results.shape)
